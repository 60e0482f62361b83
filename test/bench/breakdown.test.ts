import t from "tap";
import type { SessionEvent } from "../../common/src/index.js";
import { breakdownRow, breakdownTable, injectMsPerToken, taskBreakdown } from "../../bench/bfcl/breakdown.js";

const usage = { promptTokens: 100, prefilledTokens: 100, decodedTokens: 20, injectedTokens: 36, calls: 2, interrupts: 3, traps: 1 };

// A hand-made async session: call c1 at 10 ms (tool 120 ms), call c2 at 100 ms (tool 150 ms),
// a trap 20 → 150, c1's result and a user message injected in one step at 150,
// c2's result at 300. e2e 400 ms, of which decode steps 200 and injection steps 60.
const events: SessionEvent[] = [
  { type: "started", sessionId: "s", mode: "async", promptTokens: 100, scripted: true, t: 0 },
  { type: "call", callId: "c1", tool: "f", arguments: {}, t: 10 },
  { type: "trap", decision: "keep", expectedWaitMs: 100, contextTokens: 110, t: 20 },
  { type: "call", callId: "c2", tool: "f", arguments: {}, t: 100 },
  { type: "resume", decision: "keep", costMs: 0, t: 150 },
  { type: "interrupt", id: "c1", kind: "tool_result", value: "ok", tokens: 8, delayMs: 5, delayTokens: 0, t: 150 },
  { type: "interrupt", id: "user1", kind: "user", value: "hi", tokens: 20, delayMs: 30, delayTokens: 0, t: 150.2 },
  { type: "interrupt", id: "c2", kind: "tool_result", value: "ok", tokens: 8, delayMs: 1, delayTokens: 0, t: 300 },
  { type: "done", reason: "eos", usage, timings: { ttftMs: 5, tpotMs: 10, e2eMs: 400, totalMs: 410, decodeMs: 200, prefillMs: 60 }, scripted: true, t: 410 },
];

t.test("a task's time splits into decode, injection steps, trap waits and the rest", async (t) => {
  const b = taskBreakdown(events, new Map([["c1", 120], ["c2", 150]]));
  t.equal(b.trapMs, 130, "20 → 150");
  t.equal(b.otherMs, 10, "400 − 200 − 60 − 130");
  t.equal(b.injectSteps, 2, "c1 and user1 share a step; c2 has its own");
  t.equal(b.injectedTokens, 36);
  t.equal(b.injectDelayMs, 36);
  t.same(b.userArrivalMs, { user1: 150.2 - 30 - 5 }, "arrival 120.2 ms after acceptance, the first token at 5");
  // c1 arrived at 150 − 5 = 145: 145 − 10 − 120 = 15. c2 at 299: 299 − 100 − 150 = 49.
  t.equal(b.toolOverheadMs, 64);
  // The two injection steps took 60 ms; a decode each (2 × 10) leaves 40 ms for 36 tokens.
  t.equal(injectMsPerToken(b, 10), 40 / 36);
  t.equal(injectMsPerToken({ prefillMs: 5, injectSteps: 1, injectedTokens: 8 }, 10), 0, "never negative");
  t.equal(injectMsPerToken({ prefillMs: 0, injectSteps: 0, injectedTokens: 0 }, 10), 0);
});

t.test("breakdown rows are means per task and render as a table", async (t) => {
  const b = taskBreakdown(events, new Map([["c1", 120], ["c2", 150]]));
  const row = breakdownRow("interrupts", "async", [
    { breakdown: b, boundMs: 300, boundWithReadsMs: 330, boundReadMs: 30, boundGenMs: 150, boundTokens: 15 },
    { breakdown: { ...b, e2eMs: 600 }, boundMs: 500, boundWithReadsMs: 530, boundReadMs: 30, boundGenMs: 250, boundTokens: 25 },
  ]);
  t.equal(row.e2e_ms, 500);
  t.equal(row.bound_ms, 400);
  t.equal(row.bound_reads_ms, 430);
  t.equal(row.bound_tokens, 20);
  t.match(breakdownTable([row]), /\| interrupts \| async \| 2 \| 500 \| 400 \| 430 \|/);
});

t.test("no done event is an error", async (t) => {
  t.throws(() => taskBreakdown(events.slice(0, 3), new Map()), /no done event/);
});
