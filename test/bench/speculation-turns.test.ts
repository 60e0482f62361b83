/**
 * The speculation bench's turn segments: from a session's event times, each
 * turn's generation (start or previous result → call), tool and re-entry
 * (call → result entering, less the tool's own run), and the tail.
 */
import t from "tap";
import { turnSegments } from "../../bench/speculation/turn-segments.js";
import type { SessionEvent } from "../../common/src/index.js";

const call = (id: string, at: number): SessionEvent => ({ type: "call", callId: id, tool: "f", arguments: {}, t: at });
const result = (id: string, at: number): SessionEvent => ({ type: "interrupt", id, kind: "tool_result", value: "ok", tokens: 3, delayMs: 0, delayTokens: 0, t: at });

t.test("a chain of two calls", async (t) => {
  const events: SessionEvent[] = [
    { type: "started", sessionId: "s", mode: "sync", promptTokens: 100, scripted: true, t: 0 },
    { type: "text", text: "thinking", t: 500 },
    call("c1", 3000),
    result("c1", 8200),
    call("c2", 10200),
    { type: "trap", decision: "keep", expectedWaitMs: 4000, contextTokens: 300, t: 10201 },
    result("c2", 14500),
    { type: "text", text: " Done.", t: 14800 },
    { type: "done", reason: "eos", usage: {} as never, timings: {} as never, scripted: true, t: 15000 },
  ];
  const s = turnSegments(events, [5000, 4000]);
  t.same(s.turns, [
    { generationMs: 3000, toolMs: 5000, reentryMs: 200 },
    { generationMs: 2000, toolMs: 4000, reentryMs: 300 },
  ]);
  t.equal(s.tailMs, 500);
});

t.test("a user interrupt is not a turn's result; a tool error is", async (t) => {
  const events: SessionEvent[] = [
    call("c1", 1000),
    { type: "interrupt", id: "u1", kind: "user", value: "hurry", tokens: 2, delayMs: 0, delayTokens: 0, t: 1500 },
    { type: "interrupt", id: "c1", kind: "tool_error", value: "boom", tokens: 2, delayMs: 0, delayTokens: 0, t: 2000 },
    { type: "done", reason: "eos", usage: {} as never, timings: {} as never, scripted: true, t: 2600 },
  ];
  const s = turnSegments(events, [900]);
  t.same(s.turns, [{ generationMs: 1000, toolMs: 900, reentryMs: 100 }]);
  t.equal(s.tailMs, 600);
});
