/**
 * @module The client-side planner (Algorithm 2) and the scripted draft: at a
 * turn start at most λ predictions are used, only tools marked `speculative`
 * are started (a non-speculative tool is never started early), cached calls
 * are not started twice, max-in-flight holds, and the scripted draft's
 * accuracy and wrong calls behave as specified.
 */
import t from "tap";
import type { ToolSpec } from "../../common/src/index.js";
import type { Executor, ToolCall, ToolResult } from "../../engine-pod/src/executor/executor.js";
import { scriptedPredictions, startSpeculation, ToolCache } from "../../engine-pod/src/speculation/index.js";

const spec = (name: string, speculative: boolean): ToolSpec => ({
  name,
  description: name,
  parameters: { type: "object", properties: { q: { type: "string" }, n: { type: "integer" } }, required: ["q"] },
  speculative,
});
const TOOLS = [spec("search", true), spec("lookup", true), spec("transfer_money", false)];
const byName = new Map(TOOLS.map((x) => [x.name, x]));

class Recorder implements Executor {
  readonly started: ToolCall[] = [];
  execute(call: ToolCall): Promise<ToolResult> {
    this.started.push(call);
    return Promise.resolve({ callId: call.id, ok: true, output: `${call.tool}:${JSON.stringify(call.arguments)}`, runMs: 3 });
  }
  async close(): Promise<void> {}
}

t.test("only speculative tools start; λ and max-in-flight bound the starts; cached calls are skipped", async (t) => {
  const ex = new Recorder();
  const cache = new ToolCache();
  const preds = [
    { tool: "transfer_money", arguments: { q: "all" } },
    { tool: "search", arguments: { q: "a" } },
    { tool: "search", arguments: { q: "a" } },
    { tool: "nope", arguments: {} },
    { tool: "lookup", arguments: { q: "b" } },
  ];
  const out = startSpeculation({ sessionId: "s", predictions: preds, tools: byName, settings: { lambda: 4, maxInFlight: 8 }, executor: ex, cache });
  t.same(ex.started.map((c) => c.tool), ["search"], "non-speculative never started; duplicate and over-λ skipped");
  t.same(out.skipped.map((x) => x.reason), ["not_speculative", "cached", "unknown_tool", "over_lambda"]);
  t.equal(ex.started[0]!.sessionId, "s");
  const hit = cache.take("s", "search", { q: "a" });
  t.equal((await hit!.future).output, 'search:{"q":"a"}');

  const ex2 = new Recorder();
  const cache2 = new ToolCache();
  const many = [1, 2, 3].map((i) => ({ tool: "search", arguments: { q: String(i) } }));
  const slow: Executor = { execute: (c) => (ex2.started.push(c), new Promise(() => {})), close: async () => {} };
  const o2 = startSpeculation({ sessionId: "s", predictions: many, tools: byName, settings: { lambda: 3, maxInFlight: 2 }, executor: slow, cache: cache2 });
  t.equal(o2.started.length, 2);
  t.equal(o2.skipped[0]!.reason, "max_in_flight");
});

t.test("the session's abort signal stops speculative calls", async (t) => {
  const cache = new ToolCache();
  let seen: AbortSignal | undefined;
  const ex: Executor = { execute: (_c, signal) => ((seen = signal), new Promise(() => {})), close: async () => {} };
  const session = new AbortController();
  startSpeculation({ sessionId: "s", predictions: [{ tool: "search", arguments: { q: "x" } }], tools: byName, settings: { lambda: 1, maxInFlight: 1 }, executor: ex, cache, signal: session.signal });
  t.equal(seen?.aborted, false);
  session.abort();
  t.equal(seen?.aborted, true);
});

t.test("scripted draft: accuracy α over many turns, wrong calls are plausible and never equal the truth", async (t) => {
  const truth = { tool: "search", arguments: { q: "paris", n: 3 } };
  let right = 0;
  const N = 2000;
  for (let turn = 0; turn < N; turn++) {
    const [p] = scriptedPredictions(truth, TOOLS, 1, { alpha: 0.8, seed: 7, sessionKey: "k", turn });
    if (JSON.stringify(p) === JSON.stringify(truth)) right++;
    else {
      t.not(JSON.stringify(p!.arguments), JSON.stringify(truth.arguments) + (p!.tool === truth.tool ? "" : "!"), "differs");
      t.ok(["search", "lookup"].includes(p!.tool), "same tool or another speculative tool");
    }
  }
  t.ok(Math.abs(right / N - 0.8) < 0.03, `observed ${right / N}`);
  const a = scriptedPredictions(truth, TOOLS, 3, { alpha: 0.5, seed: 1, sessionKey: "k", turn: 4 });
  const b = scriptedPredictions(truth, TOOLS, 3, { alpha: 0.5, seed: 1, sessionKey: "k", turn: 4 });
  t.same(a, b, "deterministic per (seed, session, turn)");
  t.same(scriptedPredictions(truth, TOOLS, 2, { alpha: 1, seed: 1, sessionKey: "k", turn: 0 }), [truth, truth]);
});
