/** @module A call's arguments streamed as the model writes its body: the deltas concatenate to what it wrote. */
import t from "tap";
import { CallArgumentsStream } from "../../engine-pod/src/server/call-arguments-stream.js";

const stream = (pieces: string[], parsed: Record<string, unknown> = {}): { deltas: string[]; name: string | undefined; all: string; final: string } => {
  const s = new CallArgumentsStream();
  const deltas = pieces.map((p) => s.push(p));
  const end = s.finish(parsed);
  deltas.push(end.delta);
  return { deltas: deltas.filter((d) => d !== ""), name: s.name, all: deltas.join(""), final: end.final };
};

t.test("arguments stream once the name and the key have passed; the call's brace stays out", async (t) => {
  const r = stream([' {"name": "get', '_time", "argu', 'ments": {"ci', 'ty": "Par', 'is"}', "} "], { city: "Paris" });
  t.equal(r.name, "get_time");
  t.same(r.deltas, ['{"ci', 'ty": "Par', 'is"', "}"]);
  t.equal(r.all, '{"city": "Paris"}');
  t.equal(r.final, r.all, "the deltas spell the final arguments");
});

t.test("a brace inside the arguments is held only until more text shows it was not the end", async (t) => {
  const r = stream(['{"name":"f","arguments":{"a":{"b":1}', "", ',"c":"}"}}'], { a: { b: 1 }, c: "}" });
  t.equal(r.all, '{"a":{"b":1},"c":"}"}');
  t.equal(r.final, r.all);
});

t.test("a Python-style body streams nothing", async (t) => {
  const r = stream(["get_time(city=", "'Paris')"], { city: "Paris" });
  t.same(r.deltas, ['{"city":"Paris"}'], "until its end: then the parsed arguments, whole");
  t.equal(r.name, undefined);
  t.equal(r.final, '{"city":"Paris"}');
});

t.test("a body whose streamed arguments are not what the engine parsed ends with the parsed ones as the final arguments", async (t) => {
  const r = stream(['{"name": "f", "arguments": {"a": 1}, "extra": 2}'], { a: 1 });
  t.equal(r.final, '{"a":1}');
});

t.test("arguments pushed bare (an upstream's tool_calls) go out as they come, a closing brace included", async (t) => {
  const s = new CallArgumentsStream();
  const deltas = ['{"ci', 'ty": "Par', 'is"}'].map((p) => s.pushArguments("get_time", p));
  t.equal(s.name, "get_time");
  t.same(deltas, ['{"ci', 'ty": "Par', 'is"}'], "nothing held back: there is no call object around them");
  const end = s.finish({ city: "Paris" });
  t.equal(end.delta, "");
  t.equal(end.final, '{"city": "Paris"}', "the final arguments are the pieces, as written");
});
