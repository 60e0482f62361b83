/**
 * @module A hit on a speculative call that is still running (paper
 * Algorithm 2, line 17: `v ← await C[τ_m]`): the main model's call attaches
 * to the run already under way — the tool is not started a second time — and
 * the session waits only for what is left of it, so the time the tool ran
 * before the call is saved. In sync modes the re-entry starts the moment that
 * run settles; with engine-side speculation on, O3 finds nothing settled at
 * the call's end and the call attaches the same way. Real engine, draft
 * model, nats-server and tool runner.
 */
import t from "tap";
import type { CreateSessionRequest, SessionEvent } from "../../common/src/index.js";
import { finish, results, sleepSpec, speculationStack } from "./speculation-fixture.js";

/** Longer than the main model's reasoning before its call, so the speculative run is still going when the call comes. */
const TOOL_MS = 3000;

function request(mode: "sync" | "async", engineSide: boolean): CreateSessionRequest {
  return {
    prompt: "look it up",
    tools: [sleepSpec(true)],
    mode,
    temperature: 0,
    maxTokens: 1200,
    policy: { type: "lpt-dag", calls: [{ id: "c1", tool: "sleep", arguments: { ms: TOOL_MS, result: "slow" }, dependsOn: [], estimatedLatencyMs: TOOL_MS }], leadTokens: 200, thinkTokens: 20, finalText: " done" },
    speculation: { enabled: true, lambda: 1, maxInFlight: 2, engineSide, draft: { type: "scripted", alpha: 1, seed: 3 } },
  };
}

const at = (events: readonly SessionEvent[], type: "call" | "interrupt"): number => events.find((e) => e.type === type)!.t;

t.test("a hit on a running speculative call waits on that run: one run, and only the rest of its time", async (t) => {
  const { engine, observed } = await speculationStack(t);
  for (const [mode, engineSide] of [["sync", false], ["sync", true], ["async", false]] as const) {
    const label = `${mode}${engineSide ? " + engine-side" : ""}`;
    observed.runs.length = 0;
    observed.log.length = 0;
    const { events, done } = await finish(engine, request(mode, engineSide), observed.log);
    t.equal(done.reason, "eos", label);
    t.same(results(events), ["c1=slow"], `${label}: the result is read once`);
    t.same(observed.runs.map((c) => c.id.startsWith("spec_")), [true], `${label}: the tool ran once, the speculative run`);
    const spec = observed.runs[0]!.id;
    const order = (x: string) => observed.log.indexOf(x);
    t.ok(order(`run:${spec}`) < order("call:c1") && order("call:c1") < order(`settled:${spec}`), `${label}: the run was still going when the main model called (${observed.log.join(" ")})`);
    t.match(done.speculation, { hits: 1, misses: 0, o3Appends: 0, wasted: 0 }, `${label}: a hit, not appended by O3 (not settled yet)`);
    // The wait from the call to its result is shorter than the tool itself: the run had a head start.
    const waited = at(events, "interrupt") - at(events, "call");
    t.ok(waited < TOOL_MS, `${label}: waited ${Math.round(waited)} ms for a ${TOOL_MS} ms tool`);
    t.ok(done.speculation!.savedToolMs > 0 && done.speculation!.savedToolMs < TOOL_MS, `${label}: saved ${Math.round(done.speculation!.savedToolMs)} ms of tool time`);
  }
});
