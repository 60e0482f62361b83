/**
 * @module The decode loop's core behaviour on real llama.cpp: calls overlap
 * with decoding, injection keeps the KV cache, and an interrupt arriving
 * inside a call block waits for its `[END]`.
 */
import t from "tap";
import { CML } from "../../common/src/index.js";
import { eventsOf, sequenceOf, startEngine, TOOLS } from "./engine-fixture.js";

// One engine for the file: loading the model dominates a test's time.
const { engine, executor, runtime } = await startEngine(t);

t.test("overlap: the first call runs while the second call's tokens are decoded", async (t) => {
  for (const mode of ["async", "sync"] as const) {
    // a runs long enough in async mode that the overlap does not depend on a loaded machine's decode speed.
    const aMs = mode === "async" ? 1500 : 150;
    const calls = [
      { id: "a", tool: "wait", arguments: { ms: aMs, tag: "first" }, dependsOn: [], estimatedLatencyMs: 300 },
      { id: "b", tool: "wait", arguments: { ms: 50, tag: "second" }, dependsOn: [], estimatedLatencyMs: 50 },
    ];
    executor.calls.length = 0;
    const s = engine.createSession({ prompt: "two calls", tools: TOOLS, mode, policy: { type: "lpt-dag", calls, thinkTokens: 4 } });
    const done = await s.finished;
    t.equal(done.reason, "eos", `${mode}: finished`);
    t.equal(done.scripted, true, `${mode}: labelled scripted`);
    const [a, b] = executor.calls;
    t.ok(a !== undefined && b !== undefined, `${mode}: both calls ran`);
    if (a === undefined || b === undefined) continue;
    t.same([a.id, b.id], ["a", "b"], `${mode}: LPT order, longest first`);
    // b's call block (and the filler) was decoded after a had started.
    t.ok(b.decodedAtStart - a.decodedAtStart >= 10, `${mode}: tokens decoded between the two dispatches`);
    if (mode === "async") t.ok(b.startedAt < a.endedAt!, "async: b dispatched while a still runs");
    else t.ok(b.startedAt >= a.endedAt!, "sync: b dispatched only after a finished");
    t.equal(eventsOf(s.events, "interrupt").length, 2, `${mode}: both results delivered`);
  }
});

t.test("syncParallel: the turn's calls are dispatched together at its end, and run concurrently", async (t) => {
  executor.calls.length = 0;
  const calls = [
    { id: "a", tool: "wait", arguments: { ms: 200, tag: "first" }, dependsOn: [], estimatedLatencyMs: 200 },
    { id: "b", tool: "wait", arguments: { ms: 50, tag: "second" }, dependsOn: [], estimatedLatencyMs: 50 },
  ];
  const s = engine.createSession({ prompt: "two calls", tools: TOOLS, mode: "syncParallel", policy: { type: "lpt-dag", calls, thinkTokens: 4 } });
  const done = await s.finished;
  t.equal(done.reason, "eos");
  const [a, b] = executor.calls;
  t.ok(a !== undefined && b !== undefined, "both calls ran");
  if (a === undefined || b === undefined) return;
  t.equal(b.decodedAtStart, a.decodedAtStart, "dispatched in the same step, after both blocks were decoded");
  t.ok(b.startedAt < a.endedAt!, "they run concurrently");
  const callEvents = s.events.findIndex((e) => e.type === "call");
  const trapAt = s.events.findIndex((e) => e.type === "trap");
  t.equal(trapAt, -1, "the turn ends at the policy's trap instead of pausing the sequence");
  t.ok(callEvents > 0);
});

t.test("injection keeps the KV cache: the sequence grows by exactly the interrupt's tokens", async (t) => {
  const s = engine.createSession({
    prompt: "one call",
    tools: TOOLS,
    policy: { type: "lpt-dag", calls: [{ id: "q", tool: "wait", arguments: { ms: 20 }, dependsOn: [] }], thinkTokens: 30, finalText: " all done" },
  });
  const seq = sequenceOf(runtime, s)!;
  const meterBefore = seq.tokenMeter.usedInputTokens + seq.tokenMeter.usedOutputTokens;
  let injectedAt = -1;
  let lengthBefore = -1;
  s.subscribe((e) => {
    if (e.type === "interrupt") {
      // Emitted when the interrupt's tokens are queued to be fed in the next step.
      lengthBefore = seq.nextTokenIndex;
      injectedAt = s.inspect().tokens.context.length;
    }
  });
  const done = await s.finished;
  t.equal(done.reason, "eos");
  const intr = eventsOf(s.events, "interrupt");
  t.equal(intr.length, 1, "one interrupt");
  const tokens = intr[0]!.tokens;
  t.ok(tokens >= 5, "the block has markers, id and value");
  t.equal(done.usage.injectedTokens, tokens, "injected tokens counted");
  // The prompt may start from a resident prefix (idle prefix cache); after that nothing is prefilled again.
  t.ok(done.usage.prefilledTokens <= done.usage.promptTokens, "nothing re-prefilled: at most the prompt was prefilled");
  const reused = done.usage.promptTokens - done.usage.prefilledTokens;
  t.equal(lengthBefore, injectedAt, "the engine's view matches the sequence at injection");

  // Final sequence = prompt + every fed generated token + the interrupt, each evaluated exactly once.
  const tr = s.inspect().tokens;
  const expected = done.usage.promptTokens + tr.generated.length + tokens;
  t.equal(seq.nextTokenIndex, expected, "sequence length = prompt + generated + interrupt tokens");
  t.equal(seq.tokenMeter.usedInputTokens + seq.tokenMeter.usedOutputTokens - meterBefore, expected - reused, "evaluated = prefilled + generated + interrupt");
  t.same(seq.contextTokens, tr.context, "the sequence holds exactly the tracked tokens");

  // The interrupt's tokens are in place, right after the token they followed.
  const rt = runtime;
  const block = [...rt.markerIds[CML.INTR], ...rt.tokenizeText("q"), ...rt.markerIds[CML.HEAD], ...rt.tokenizeText("waited 20"), ...rt.markerIds[CML.END]];
  t.equal(block.length, tokens);
  const ctx = seq.contextTokens;
  t.same(ctx.slice(injectedAt + 1, injectedAt + 1 + tokens), block, "[INTR] q [HEAD] waited 20 [END] appended in place");
});

t.test("an interrupt arriving inside a call block is injected only after its [END]", async (t) => {
  const long = "x".repeat(60);
  // `fast` answers at once (while `slow`'s block is being decoded); `slow` has a long body.
  const s = engine.createSession({
    prompt: "critical sections",
    tools: TOOLS,
    policy: {
      type: "lpt-dag",
      calls: [
        { id: "fast", tool: "echo", arguments: { text: "hi" }, dependsOn: [], estimatedLatencyMs: 500 },
        { id: "slow", tool: "wait", arguments: { ms: 10, tag: long }, dependsOn: [], estimatedLatencyMs: 10 },
      ],
    },
  });
  const done = await s.finished;
  t.equal(done.reason, "eos");
  const order = s.events.filter((e) => e.type === "call" || e.type === "interrupt").map((e) => (e.type === "call" ? `call:${e.callId}` : `intr:${e.id}`));
  t.same(order.slice(0, 3), ["call:fast", "call:slow", "intr:fast"], "fast's result waits for slow's [END]");
  const fast = eventsOf(s.events, "interrupt").find((e) => e.id === "fast")!;
  t.ok(fast.delayTokens >= 20, `held for the whole block (${fast.delayTokens} tokens)`);
  t.equal(fast.deferred, true, "its event says it was deferred");
  t.ok(engine.stats().interruptsDeferred >= 1, "counted as deferred by a critical section");
  // In the token stream, the [INTR] follows slow's [END] directly.
  const rt = runtime;
  const ctx = s.inspect().tokens.context;
  // Search the generated part only: the system prompt's few-shot example has markers too.
  const promptLen = done.usage.promptTokens;
  const intrAt = ctx.indexOf(rt.markerIds[CML.INTR][0]!, promptLen);
  t.equal(ctx[intrAt - 1], rt.markerIds[CML.END][0], "[INTR] right after an [END]");
  const callStarts = ctx.map((tk, i) => (i >= promptLen && tk === rt.markerIds[CML.CALL][0] ? i : -1)).filter((i) => i >= 0);
  t.equal(callStarts.length, 2);
  t.ok(intrAt > callStarts[1]!, "after the second call block, not inside it");
});
