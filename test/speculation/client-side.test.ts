/**
 * @module Client-side speculation (Algorithm 2) end to end: a real engine on
 * the generated `test` model with a second generated model as the draft, a
 * real nats-server and a tool runner. At each turn start the scripted draft
 * (accuracy α, real draft forward passes) predicts the next call; only tools
 * marked speculative start early. A hit delivers the speculative result once
 * and the real call is not run again; a miss runs the tool; a wrong guess is
 * discarded and counted wasted; the TTL drops a stale speculation.
 */
import t from "tap";
import type { CreateSessionRequest, ToolSpec } from "../../common/src/index.js";
import { echoSpec, finish, results, sleepSpec, speculationStack as stack } from "./speculation-fixture.js";

function chain(mode: "sync" | "async", alpha: number, tools: ToolSpec[], calls: Extract<NonNullable<CreateSessionRequest["policy"]>, { type: "lpt-dag" }>["calls"], engineSide = false): CreateSessionRequest {
  return {
    prompt: "look two things up, one after the other",
    tools,
    mode,
    temperature: 0,
    maxTokens: 1500,
    // Reasoning before each call (G) long enough that the tiny draft (g) is done first.
    policy: { type: "lpt-dag", calls, leadTokens: 200, thinkTokens: 200, finalText: " done" },
    speculation: { enabled: true, lambda: 1, maxInFlight: 2, engineSide, draft: { type: "scripted", alpha, seed: 3 } },
  };
}

const twoSleeps = [
  { id: "c1", tool: "sleep", arguments: { ms: 300, result: "first" }, dependsOn: [], estimatedLatencyMs: 300 },
  { id: "c2", tool: "sleep", arguments: { ms: 300, result: "second" }, dependsOn: ["c1"], estimatedLatencyMs: 300 },
];

t.test("α = 1: every call is a hit, delivered once; the real calls never run (sync and async)", async (t) => {
  const { engine, observed } = await stack(t);
  for (const mode of ["sync", "async"] as const) {
    observed.runs.length = 0;
    const { events, done } = await finish(engine, chain(mode, 1, [sleepSpec(true)], twoSleeps));
    t.equal(done.reason, "eos", mode);
    t.same(results(events), ["c1=first", "c2=second"], `${mode}: each result once, the speculative one`);
    t.same(observed.runs.map((c) => c.id.startsWith("spec_")), [true, true], `${mode}: only the speculative runs reached the tools`);
    t.match(done.speculation, { started: 2, hits: 2, misses: 0, wasted: 0, draftRuns: 2 });
    t.equal(done.scripted, true);
    t.ok(done.speculation!.draftMs > 0, "the draft's forward passes took time");
    t.ok(done.speculation!.savedToolMs > 0);
  }
});

t.test("α = 0: wrong guesses are discarded and counted wasted; the real calls run (a miss runs the tool)", async (t) => {
  const { engine, observed } = await stack(t);
  const { events, done } = await finish(engine, chain("sync", 0, [sleepSpec(true)], twoSleeps));
  t.same(results(events), ["c1=first", "c2=second"]);
  const real = observed.runs.filter((c) => !c.id.startsWith("spec_")).map((c) => c.id);
  t.same(real, ["c1", "c2"], "both real calls ran");
  t.match(done.speculation, { started: 2, hits: 0, misses: 2, wasted: 2 });
});

t.test("a non-speculative tool is never started early, even when predicted right", async (t) => {
  const { engine, observed } = await stack(t);
  const calls = [
    { id: "c1", tool: "sleep", arguments: { ms: 100, result: "x" }, dependsOn: [], estimatedLatencyMs: 100 },
    { id: "c2", tool: "echo", arguments: { text: "hi" }, dependsOn: ["c1"], estimatedLatencyMs: 1 },
  ];
  const { done } = await finish(engine, chain("async", 1, [sleepSpec(false), echoSpec], calls));
  t.equal(observed.runs.filter((c) => c.id.startsWith("spec_")).length, 0, "nothing started early");
  t.same(observed.runs.map((c) => c.id), ["c1", "c2"]);
  t.match(done.speculation, { started: 0, hits: 0, misses: 0 });
});

t.test("the TTL drops a stale speculation: the call misses and runs", async (t) => {
  const { engine, observed } = await stack(t, { cacheTtlMs: 1 });
  const { events, done } = await finish(engine, chain("sync", 1, [sleepSpec(true)], twoSleeps.slice(0, 1)));
  t.same(results(events), ["c1=first"]);
  t.same(observed.runs.map((c) => c.id.startsWith("spec_") ? "spec" : c.id), ["spec", "c1"]);
  t.match(done.speculation, { started: 1, hits: 0, misses: 1, wasted: 1 });
});

const quickSleeps = [
  { id: "c1", tool: "sleep", arguments: { ms: 5, result: "first" }, dependsOn: [], estimatedLatencyMs: 5 },
  { id: "c2", tool: "sleep", arguments: { ms: 5, result: "second" }, dependsOn: ["c1"], estimatedLatencyMs: 5 },
];

t.test("engine-side: O2 validates the cached call in one pass, O3 appends its result without a trap or re-entry (sync)", async (t) => {
  const { engine, observed } = await stack(t);
  const base = await finish(engine, { ...chain("sync", 1, [sleepSpec(true)], quickSleeps), speculation: { enabled: false } });
  const { events, done } = await finish(engine, chain("sync", 1, [sleepSpec(true)], quickSleeps, true));
  t.same(results(events), ["c1=first", "c2=second"]);
  t.same(
    events.filter((e) => e.type === "call").map((e) => e.type === "call" && [e.callId, e.arguments]),
    base.events.filter((e) => e.type === "call").map((e) => e.type === "call" && [e.callId, e.arguments]),
    "same calls as without speculation",
  );
  t.match(done.speculation, { hits: 2, o3Appends: 2, misses: 0 });
  t.ok(done.speculation!.draftTokensProposed > 0, "drafts proposed");
  t.equal(done.speculation!.draftTokensAccepted, done.speculation!.draftTokensProposed, "a right draft is accepted whole");
  t.equal(done.usage.traps, 0, "no trap");
  t.ok(done.usage.injectedTokens > 0, "results appended in the live sequence (sync mode re-enters otherwise)");
  t.ok(done.usage.prefilledTokens < base.done.usage.prefilledTokens, "no re-prefill of the history");
  t.equal(observed.runs.filter((c) => !c.id.startsWith("spec_")).length, 0 + base.events.filter((e) => e.type === "call").length, "only the baseline's own calls ran for real");
});

t.test("engine-side: a wrong cached call is cut at its first mismatched token; the output is the script's", async (t) => {
  const { engine } = await stack(t);
  const { events, done } = await finish(engine, chain("async", 0, [sleepSpec(true)], quickSleeps, true));
  t.same(results(events), ["c1=first", "c2=second"]);
  t.same(events.filter((e) => e.type === "call").map((e) => e.type === "call" && e.arguments), [quickSleeps[0]!.arguments, quickSleeps[1]!.arguments]);
  t.ok(done.speculation!.draftTokensProposed > 0);
  t.ok(done.speculation!.draftTokensAccepted < done.speculation!.draftTokensProposed, "the mismatch stopped acceptance");
  t.match(done.speculation, { hits: 0, o3Appends: 0, misses: 2 });
});
