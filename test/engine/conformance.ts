/**
 * @module The Engine conformance suite: every `Engine` implementation (the
 * llama.cpp engine, the `openai` backend over a real upstream server) runs
 * it through the public contract only — sessions and their events, each
 * calling mode it serves, invalid calls, interrupts (the one that arrives
 * during the last turn included), cancellation, request errors and the token
 * limit. Sessions are scripted (`lpt-dag`), so every engine is asked for the
 * same calls; tools are the builtins (`echo`, `sleep`) on an in-process
 * executor. Assertions are on events and outcomes, never on durations.
 */
import type { Test } from "tap";
import { ErrorCode, type CallingMode, type CreateSessionRequest, type ScriptedCall, type SessionEvent, type ToolSpec } from "../../common/src/index.js";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import type { Engine, EngineSession } from "../../engine-pod/src/engine/index.js";

/** The engine under test, shared by the suite's cases (created and closed by the caller). */
export interface EngineSubject {
  engine: Engine;
  /** The session modes it serves. */
  modes: readonly CallingMode[];
  /** Modes it refuses, with what the reason says. */
  refused: readonly { mode: CallingMode; reason: RegExp }[];
  /** Whether `text` was in the model's input during the session (its context, or a request sent upstream). */
  sawInput(session: EngineSession, text: string): boolean;
}

const TOOLS: ToolSpec[] = builtinToolSpecs().filter((t) => t.name === "echo" || t.name === "sleep");

type Call = Omit<ScriptedCall, "dependsOn" | "estimatedLatencyMs"> & { dependsOn?: string[]; estimatedLatencyMs?: number };

function scripted(mode: CallingMode, calls: Call[], finalText: string, extra: Partial<CreateSessionRequest> = {}): CreateSessionRequest {
  return {
    prompt: "Look two things up, then answer.",
    tools: TOOLS,
    mode,
    temperature: 0,
    maxTokens: 1000,
    policy: { type: "lpt-dag", calls: calls.map((c) => ({ dependsOn: [], estimatedLatencyMs: 1, ...c })), finalText },
    ...extra,
  };
}

const of = <T extends SessionEvent["type"]>(events: readonly SessionEvent[], type: T): Extract<SessionEvent, { type: T }>[] =>
  events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);

/** Resolves with the first event after which `match` holds (checked against events already out, then new ones). */
function when(s: EngineSession, match: (e: SessionEvent, all: readonly SessionEvent[]) => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (s.events.some((e) => match(e, s.events))) return resolve();
    const off = s.subscribe((e) => {
      if (match(e, s.events)) {
        off();
        resolve();
      }
    });
  });
}

/** Registers the conformance subtests on `t`. */
export function engineConformance(t: Test, subject: EngineSubject): void {
  const { engine } = subject;
  const before = (events: readonly SessionEvent[], a: (e: SessionEvent) => boolean, b: (e: SessionEvent) => boolean): boolean => {
    const i = events.findIndex(a);
    const j = events.findIndex(b);
    return i >= 0 && j >= 0 && i < j;
  };

  for (const mode of subject.modes) {
    t.test(`${mode}: every call dispatched once with its arguments, every result read, then the final text`, async (t) => {
      const s = engine.createSession(
        scripted(
          mode,
          [
            { id: "slow", tool: "sleep", arguments: { ms: 200, result: "found" }, estimatedLatencyMs: 200 },
            { id: "quick", tool: "echo", arguments: { text: "hi 안녕" } },
            { id: "after", tool: "echo", arguments: { text: "then" }, dependsOn: ["quick"] },
          ],
          " all done",
        ),
      );
      t.equal(engine.getSession(s.id), s, "getSession finds it");
      const done = await s.finished;
      t.equal(done.reason, "eos", JSON.stringify(of(s.events, "error")));
      t.match(s.events[0], { type: "started", sessionId: s.id, mode, scripted: true }, "started first");
      t.equal(s.events.at(-1), done, "done last");
      t.equal(of(s.events, "done").length, 1, "done once");
      t.same(
        of(s.events, "call").map((c) => [c.callId, c.tool, c.arguments]).sort(),
        [
          ["after", "echo", { text: "then" }],
          ["quick", "echo", { text: "hi 안녕" }],
          ["slow", "sleep", { ms: 200, result: "found" }],
        ],
        "each call once, exact arguments",
      );
      const results = new Map(of(s.events, "interrupt").map((i) => [i.id, [i.kind, i.value]]));
      t.same(results.get("slow"), ["tool_result", "found"]);
      t.same(results.get("quick"), ["tool_result", "hi 안녕"]);
      t.same(results.get("after"), ["tool_result", "then"]);
      t.ok(before(s.events, (e) => e.type === "interrupt" && e.id === "quick", (e) => e.type === "call" && e.callId === "after"), "a dependent call waits for its dependency's result");
      t.match(of(s.events, "text").map((e) => e.text).join(""), /all done$/, "the final text");
      t.equal(done.usage.calls, 3);
      t.ok(subject.sawInput(s, "hi 안녕"), "the model read the results");
      const late: SessionEvent[] = [];
      s.subscribe((e) => late.push(e));
      t.same(late, [], "nothing after done");
    });

    t.test(`${mode}: an invalid call is refused with the reason the model reads; the session goes on`, async (t) => {
      const s = engine.createSession(
        scripted(
          mode,
          [
            { id: "bad", tool: "sleep", arguments: { ms: "soon" } },
            { id: "good", tool: "echo", arguments: { text: "fine" } },
          ],
          " ok",
        ),
      );
      const done = await s.finished;
      t.equal(done.reason, "eos");
      t.match(of(s.events, "call_error"), [{ callId: "bad", code: ErrorCode.InvalidArguments, message: /ms/ }]);
      t.match(of(s.events, "interrupt").find((i) => i.id === "bad"), { kind: "tool_error", value: /^error: invalid_arguments/ }, "the error line is read back");
      t.same(of(s.events, "call").map((c) => c.callId), ["good"]);
      t.equal(done.usage.calls, 1);
    });

    t.test(`${mode}: a user interrupt accepted while a call runs is read`, async (t) => {
      const s = engine.createSession(scripted(mode, [{ id: "w", tool: "sleep", arguments: { ms: 400 }, estimatedLatencyMs: 400 }], " ok"));
      await when(s, (e) => e.type === "call" && e.callId === "w");
      t.equal(engine.interrupt(s.id, { id: "u1", kind: "user", value: "also: the 북쪽 wing" }), true, "accepted");
      const done = await s.finished;
      t.equal(done.reason, "eos");
      t.match(of(s.events, "interrupt").find((i) => i.id === "u1"), { kind: "user", value: "also: the 북쪽 wing" });
      t.ok(subject.sawInput(s, "also: the 북쪽 wing"), "in the model's input");
    });

    t.test(`${mode}: an interrupt that arrives during the last turn is read before the session ends`, async (t) => {
      const s = engine.createSession(scripted(mode, [{ id: "c", tool: "echo", arguments: { text: "x" } }], " word".repeat(40)));
      // The last turn is writing the final text: its first piece is out after the call's result was read.
      await when(s, (e, all) => e.type === "text" && all.some((x) => x.type === "interrupt" && x.id === "c"));
      t.equal(engine.interrupt(s.id, { id: "late", kind: "user", value: "one more thing" }), true, "accepted");
      const done = await s.finished;
      t.equal(done.reason, "eos");
      t.ok(before(s.events, (e) => e.type === "interrupt" && e.id === "late", (e) => e.type === "done"), "delivered before done, not dropped");
      t.ok(subject.sawInput(s, "one more thing"), "the model read it");
    });

    t.test(`${mode}: cancel ends the session; a finished session takes no interrupt`, async (t) => {
      const s = engine.createSession(scripted(mode, [{ id: "w", tool: "sleep", arguments: { ms: 30_000 }, estimatedLatencyMs: 30_000 }], " never"));
      await when(s, (e) => e.type === "call");
      t.equal(engine.cancel(s.id), true);
      const done = await s.finished;
      t.equal(done.reason, "cancelled");
      t.equal(engine.interrupt(s.id, { kind: "user", value: "too late" }), false, "refused after done");
      t.equal(engine.cancel("no-such-session"), false);
      t.equal(engine.interrupt("no-such-session", { kind: "user", value: "x" }), false);
    });

    t.test(`${mode}: maxTokens bounds the session`, async (t) => {
      const s = engine.createSession(scripted(mode, [], " word".repeat(200), { maxTokens: 12 }));
      const done = await s.finished;
      t.equal(done.reason, "max_tokens");
      t.ok(done.usage.decodedTokens > 0 && done.usage.decodedTokens <= 12, `${done.usage.decodedTokens} tokens`);
    });
  }

  t.test("bad requests are refused with a code and a reason", async (t) => {
    const mode = subject.modes[0]!;
    t.throws(() => engine.createSession(scripted(mode, [{ id: "x", tool: "nope", arguments: {} }], "")), { code: ErrorCode.UnknownTool });
    t.throws(() => engine.createSession(scripted(mode, [{ id: "x", tool: "echo", arguments: { text: "a" }, dependsOn: ["ghost"] }], "")), { code: ErrorCode.BadRequest });
    t.throws(() => engine.createSession({ ...scripted(mode, [], ""), prompt: "" }), { code: ErrorCode.BadRequest });
    t.throws(() => engine.createSession({ ...scripted(mode, [], ""), mode: "later" as CallingMode }), { code: ErrorCode.BadRequest, message: /unknown mode/ });
    t.throws(() => engine.createSession({ ...scripted(mode, [], ""), temperature: 9 }), { code: ErrorCode.BadRequest });
    for (const { mode: refused, reason } of subject.refused) t.throws(() => engine.createSession(scripted(refused, [], "")), { code: ErrorCode.BadRequest, message: reason }, `${refused} refused`);
  });
}
