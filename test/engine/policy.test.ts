/**
 * @module Scripted policies (pure, with a character tokenizer): the LPT oracle
 * emits ready calls longest-first with filler between them, traps when nothing
 * is ready, finishes when every result is in, and derives everything from the
 * transcript view; the text policy emits its pieces then EOS.
 */
import t from "tap";
import type { Token } from "node-llama-cpp";
import { createPolicy, formatCallBody, scanTranscript, type PolicyTokenizer, type PolicyView, type TokenPolicy } from "../../engine-pod/src/policy/index.js";

// One token per character: decoding is String.fromCharCode.
const tok: PolicyTokenizer = {
  tokenizeCml: (s) => [...s].map((c) => c.charCodeAt(0) as Token),
  tokenizeText: (s) => [...s].map((c) => c.charCodeAt(0) as Token),
};

/** Runs the policy until EOS or until its output ends with `[END]` (a block boundary). */
function until(policy: TokenPolicy, view: PolicyView): string {
  let out = "";
  for (let i = 0; i < 10_000; i++) {
    const step = policy.next(view);
    if (step === "eos") return `${out}<eos>`;
    out += String.fromCharCode(step);
    if (out.endsWith("[END]")) return out;
  }
  throw new Error("no block boundary");
}

t.test("lpt-dag: longest ready call first, trap when blocked, final text when done", async (t) => {
  const p = createPolicy(
    {
      type: "lpt-dag",
      calls: [
        { id: "s", tool: "short", arguments: { x: 1 }, dependsOn: [], estimatedLatencyMs: 10 },
        { id: "l", tool: "long", arguments: {}, dependsOn: [], estimatedLatencyMs: 500 },
        { id: "d", tool: "dep", arguments: { y: "z" }, dependsOn: ["s", "l"], estimatedLatencyMs: 1000 },
      ],
      thinkTokens: 4,
      finalText: " ok",
    },
    tok,
  );
  const view = { emittedCalls: new Set<string>(), injected: new Set<string>() };
  t.equal(until(p, view), '[CALL]l[HEAD]{"name":"long","arguments":{}}[END]', "longest first, no filler before the first call");
  view.emittedCalls.add("l");
  const second = until(p, view);
  t.equal(second.length, 4 + '[CALL]s[HEAD]{"name":"short","arguments":{"x":1}}[END]'.length, "filler of exactly thinkTokens");
  t.ok(second.endsWith('[CALL]s[HEAD]{"name":"short","arguments":{"x":1}}[END]'));
  view.emittedCalls.add("s");
  t.equal(until(p, view), "[TRAP][END]", "d waits for both results");
  view.injected.add("l");
  t.equal(until(p, view), "[TRAP][END]", "still waiting for s");
  view.injected.add("s");
  t.match(until(p, view), /\[CALL\]d\[HEAD\]\{"name":"dep","arguments":\{"y":"z"\}\}\[END\]$/);
  view.emittedCalls.add("d");
  t.equal(until(p, view), "[TRAP][END]");
  view.injected.add("d");
  t.equal(until(p, view), " ok<eos>", "final text, then EOS");
  t.equal(until(p, view), "<eos>");
});

t.test("lpt-dag: state comes from the view, so a fresh policy resumes mid-DAG", async (t) => {
  const spec = {
    type: "lpt-dag" as const,
    callStyle: "python" as const,
    calls: [
      { id: "a", tool: "f", arguments: { q: "x", n: 2, ok: true, none: null }, dependsOn: [] },
      { id: "b", tool: "g", arguments: {}, dependsOn: ["a"] },
    ],
  };
  const view = scanTranscript('[CALL] a [HEAD] f(q="x") [END] text [INTR] a [HEAD] 42 [END]');
  t.same([...view.emittedCalls], ["a"]);
  t.same([...view.injected], ["a"]);
  t.equal(until(createPolicy(spec, tok), view), "[CALL]b[HEAD]g()[END]");
  t.equal(formatCallBody("f", { q: "x", n: 2, ok: true, none: null, l: [1, "a"] }, "python"), 'f(q="x", n=2, ok=True, none=None, l=[1, "a"])');
});

t.test("text: the pieces in order, then EOS", async (t) => {
  const p = createPolicy({ type: "text", pieces: ["ab", "[TRAP][END]", "c"] }, tok);
  const view = { emittedCalls: new Set<string>(), injected: new Set<string>() };
  t.equal(until(p, view), "ab[TRAP][END]");
  t.equal(until(p, view), "c<eos>");
});
