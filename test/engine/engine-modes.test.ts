/**
 * @module Calling modes on one engine (real llama.cpp): async, sync with and
 * without prefix reuse, and syncParallel produce the same calls and results;
 * sync with prefix reuse prefills fewer tokens than without; traps exercise
 * keep, swap and recompute, and the model's greedy samples after a resume are
 * the same as if the sequence had never paused.
 */
import t from "tap";
import type { CreateSessionRequest, KvPolicy } from "../../common/src/index.js";
import { eventsOf, startEngine, TOOLS } from "./engine-fixture.js";

const { engine } = await startEngine(t, { sequences: 4 });

// a and b are independent; c needs both; d needs c.
const dag: CreateSessionRequest["policy"] = {
  type: "lpt-dag",
  calls: [
    { id: "a", tool: "wait", arguments: { ms: 40, tag: "A" }, dependsOn: [], estimatedLatencyMs: 40 },
    { id: "b", tool: "echo", arguments: { text: "B" }, dependsOn: [], estimatedLatencyMs: 5 },
    { id: "c", tool: "wait", arguments: { ms: 10, tag: "C" }, dependsOn: ["a", "b"], estimatedLatencyMs: 10 },
    { id: "d", tool: "echo", arguments: { text: "D" }, dependsOn: ["c"], estimatedLatencyMs: 1 },
  ],
  thinkTokens: 3,
  finalText: " finished",
};

t.test("sync, syncParallel and async produce the same calls and results", async (t) => {
  const runs: Record<string, { calls: string[]; results: string[]; prefilled: number; prompt: number }> = {};
  for (const [name, extra] of [
    ["async", { mode: "async" }],
    ["sync-reuse", { mode: "sync", prefixReuse: true }],
    ["sync-noreuse", { mode: "sync", prefixReuse: false }],
    ["syncParallel", { mode: "syncParallel" }],
  ] as const) {
    const s = engine.createSession({ prompt: "run the dag", tools: TOOLS, policy: dag, ...extra });
    const done = await s.finished;
    t.equal(done.reason, "eos", `${name}: finished`);
    t.equal(done.usage.calls, 4, `${name}: four calls`);
    runs[name] = {
      calls: eventsOf(s.events, "call").map((c) => `${c.callId}:${c.tool}:${JSON.stringify(c.arguments)}`).sort(),
      results: eventsOf(s.events, "interrupt").map((i) => `${i.id}=${i.value}`).sort(),
      prefilled: done.usage.prefilledTokens,
      prompt: done.usage.promptTokens,
    };
    t.match(eventsOf(s.events, "text").map((e) => e.text).join(""), /finished$/, `${name}: final text`);
  }
  const base = runs["async"]!;
  t.equal(base.results.length, 4);
  for (const name of ["sync-reuse", "sync-noreuse", "syncParallel"]) {
    t.same(runs[name]!.calls, base.calls, `${name}: same calls as async`);
    t.same(runs[name]!.results, base.results, `${name}: same results as async`);
  }
  const reuse = runs["sync-reuse"]!;
  const noreuse = runs["sync-noreuse"]!;
  t.ok(reuse.prefilled < noreuse.prefilled, `prefix reuse prefills fewer tokens (${reuse.prefilled} < ${noreuse.prefilled})`);
  // Four re-entries, each re-prefilling at least the whole prompt.
  t.ok(noreuse.prefilled >= 5 * noreuse.prompt, "without reuse every re-entry re-prefills the history");
  t.ok(base.prefilled <= base.prompt, "async never re-prefills");
});

t.test("traps: keep, swap and recompute resume to the same greedy continuation", async (t) => {
  // One call, a trap while it runs, then the model's samples are logged for 40 more tokens (filler).
  const policy: CreateSessionRequest["policy"] = {
    type: "lpt-dag",
    // Long enough that the result is still out when the trap comes, however loaded the machine.
    calls: [{ id: "w", tool: "wait", arguments: { ms: 1500 }, dependsOn: [], estimatedLatencyMs: 1500 }],
    finalText: " the answer is here and it is done and we can now use the result for the next question",
  };
  const sampledAfter: Record<string, number[]> = {};
  for (const kvPolicy of ["keep", "swap", "recompute"] as KvPolicy[]) {
    const s = engine.createSession({ prompt: "trap me", tools: TOOLS, policy, kvPolicy, temperature: 0, prefixReuse: false });
    const done = await s.finished;
    t.equal(done.reason, "eos", `${kvPolicy}: finished`);
    const trap = eventsOf(s.events, "trap");
    const resume = eventsOf(s.events, "resume");
    t.equal(trap.length, 1, `${kvPolicy}: one trap`);
    t.equal(trap[0]?.decision, kvPolicy, `${kvPolicy}: decision taken`);
    t.equal(resume[0]?.decision, kvPolicy, `${kvPolicy}: resumed`);
    t.ok((resume[0]?.costMs ?? -1) >= 0, `${kvPolicy}: cost reported`);
    const tr = s.inspect().tokens;
    const at = s.events.findIndex((e) => e.type === "resume");
    t.ok(at > 0);
    // What the model sampled after the interrupt: a function of the KV state only (greedy).
    const intrTokens = eventsOf(s.events, "interrupt")[0]!.tokens;
    t.ok(intrTokens > 0);
    sampledAfter[kvPolicy] = tr.sampled.slice(-30);
    if (kvPolicy === "recompute") t.ok(done.usage.prefilledTokens > done.usage.promptTokens, "recompute re-evaluates the context");
  }
  t.same(sampledAfter["swap"], sampledAfter["keep"], "swap: same greedy samples as keep");
  t.same(sampledAfter["recompute"], sampledAfter["keep"], "recompute: same greedy samples as keep");
  const stats = engine.stats().trapsByDecision;
  t.ok(stats.keep >= 1 && stats.swap >= 1 && stats.recompute >= 1, "every decision counted");
});

t.test("async EOS with results outstanding waits for them (AsyncLM semantics)", async (t) => {
  // The text policy ends right after dispatching: EOS arrives while the call runs.
  const s = engine.createSession({
    prompt: "eos early",
    tools: TOOLS,
    policy: { type: "text", pieces: ['[CALL] late [HEAD] {"name": "wait", "arguments": {"ms": 80}} [END]'] },
    maxTokens: 60,
  });
  const done = await s.finished;
  const kinds = s.events.map((e) => e.type);
  t.ok(kinds.indexOf("trap") > kinds.indexOf("call"), "EOS with a pending call traps");
  t.ok(kinds.indexOf("interrupt") > kinds.indexOf("trap"), "the result is injected after the wait");
  t.equal(done.usage.interrupts, 1);
  t.equal(done.reason, "eos", "then the session ends");
});

t.test("sync modes deliver results and errors by re-entry, never by injection", async (t) => {
  for (const mode of ["sync", "syncParallel"] as const) {
    const s = engine.createSession({
      prompt: "sync errors",
      tools: TOOLS,
      mode,
      prefixReuse: false,
      policy: { type: "text", pieces: ['[CALL] bad [HEAD] {"name": "nope", "arguments": {}} [END][CALL] ok [HEAD] {"name": "echo", "arguments": {"text": "y"}} [END][TRAP][END] fine'] },
    });
    const done = await s.finished;
    t.equal(done.reason, "eos", `${mode}: finished`);
    t.same(eventsOf(s.events, "call_error").map((e) => e.callId), ["bad"], `${mode}: the invalid call is reported`);
    t.same(eventsOf(s.events, "interrupt").map((i) => [i.id, i.kind]), [["bad", "tool_error"], ["ok", "tool_result"]], `${mode}: both delivered`);
    t.equal(done.usage.injectedTokens, 0, `${mode}: nothing injected into the live stream`);
    t.ok(done.usage.prefilledTokens > done.usage.promptTokens, `${mode}: delivered by re-prefilled requests`);
  }
});
