/** @module A call's arguments streamed as the model writes its body: the deltas concatenate to what it wrote. */
import t from "tap";
import { CallArgumentsStream } from "../../engine-pod/src/server/call-arguments-stream.js";

const stream = (pieces: string[]): { deltas: string[]; name: string | undefined; all: string } => {
  const s = new CallArgumentsStream();
  const deltas = pieces.map((p) => s.push(p));
  deltas.push(s.finish());
  return { deltas: deltas.filter((d) => d !== ""), name: s.name, all: s.streamed };
};

t.test("arguments stream once the name and the key have passed; the call's brace stays out", async (t) => {
  const r = stream([' {"name": "get', '_time", "argu', 'ments": {"ci', 'ty": "Par', 'is"}', "} "]);
  t.equal(r.name, "get_time");
  t.same(r.deltas, ['{"ci', 'ty": "Par', 'is"', "}"]);
  t.equal(r.all, '{"city": "Paris"}');
  t.same(JSON.parse(r.all), { city: "Paris" });
});

t.test("a brace inside the arguments is held only until more text shows it was not the end", async (t) => {
  const r = stream(['{"name":"f","arguments":{"a":{"b":1}', "", ',"c":"}"}}']);
  t.equal(r.all, '{"a":{"b":1},"c":"}"}');
  t.same(JSON.parse(r.all), { a: { b: 1 }, c: "}" });
});

t.test("a Python-style body streams nothing", async (t) => {
  const r = stream(["get_time(city=", "'Paris')"]);
  t.same(r.deltas, []);
  t.equal(r.name, undefined);
});
