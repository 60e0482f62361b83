/** @module Stop sequences over streamed text: held back while they may match, cut where they do. */
import t from "tap";
import { StopSequences } from "../../engine-pod/src/engine/stop-sequences.js";

const run = (stops: string[], pieces: string[]): { text: string; stopped: boolean } => {
  const s = new StopSequences(stops);
  let text = "";
  let stopped = false;
  for (const p of pieces) {
    const out = s.push(p);
    text += out.emit;
    stopped ||= out.stopped;
  }
  return { text: text + s.flush(), stopped };
};

t.test("a stop sequence split over pieces is cut, and none of it is emitted", async (t) => {
  t.same(run(["END"], ["hello E", "N", "D and more"]), { text: "hello ", stopped: true });
  t.same(run(["\n\n"], ["a\n", "\nb"]), { text: "a", stopped: true });
});

t.test("a near miss is released whole, in order", async (t) => {
  t.same(run(["END"], ["hello E", "Nx", " ok"]), { text: "hello ENx ok", stopped: false });
  const s = new StopSequences(["abc"]);
  t.same(s.push("xxab"), { emit: "xx", stopped: false }, "a possible start is held");
  t.equal(s.flush(), "ab", "and given back when the text ends");
});

t.test("the earliest of several sequences wins; text after a stop is dropped", async (t) => {
  t.same(run(["cd", "b"], ["abcd"]), { text: "a", stopped: true });
  const s = new StopSequences(["x"]);
  s.push("1x2");
  t.same(s.push("more"), { emit: "", stopped: true });
});
