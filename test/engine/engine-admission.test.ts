/**
 * @module Admission and bad input on real llama.cpp: more sessions than
 * sequences (capacity), a prompt longer than the context (context_overflow),
 * unknown tools in a policy, an invalid call becoming an error interrupt the
 * model reads, user interrupts, and cancel freeing the sequence's KV cells.
 */
import t from "tap";
import { ErrorCode, InterlaceError } from "../../common/src/index.js";
import { eventsOf, sequenceOf, startEngine, TOOLS } from "./engine-fixture.js";

const { engine, runtime } = await startEngine(t, { sequences: 2, maxTokens: 100_000 });

function code(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof InterlaceError ? err.code : `not an InterlaceError: ${String(err)}`;
  }
}

t.test("more sessions than sequences: capacity; cancel frees the sequence", async (t) => {
  const a = engine.createSession({ prompt: "first", tools: TOOLS, temperature: 0.8, seed: 1 });
  const b = engine.createSession({ prompt: "second", tools: TOOLS, temperature: 0.8, seed: 2 });
  t.equal(code(() => engine.createSession({ prompt: "third", tools: TOOLS })), ErrorCode.Capacity, "third session → capacity");
  t.equal(engine.stats().activeSessions, 2);
  // Let both decode a little, then cancel one.
  await new Promise<void>((resolve) => {
    const off = a.subscribe((e) => {
      if (e.type === "text") (off(), resolve());
    });
  });
  const seqA = sequenceOf(runtime, a)!;
  t.ok(seqA.nextTokenIndex > 0, "a holds KV cells while running");
  t.equal(engine.cancel(a.id), true);
  const doneA = await a.finished;
  t.equal(doneA.reason, "cancelled");
  t.equal(seqA.nextTokenIndex, 0, "a's KV cells are cleared");
  t.equal(engine.interrupt(a.id, { kind: "user", value: "late" }), false, "no interrupts for a finished session");
  const c = engine.createSession({ prompt: "third again", tools: TOOLS, maxTokens: 5 });
  t.equal((await c.finished).reason, "max_tokens", "the freed slot serves a new session");
  engine.cancel(b.id);
  t.equal((await b.finished).reason, "cancelled");
  t.equal(engine.cancel("no-such-session"), false);
});

t.test("a prompt longer than the context: context_overflow", async (t) => {
  const long = "hello world ".repeat(engine.contextSize);
  t.equal(code(() => engine.createSession({ prompt: long, tools: TOOLS })), ErrorCode.ContextOverflow);
  await t.rejects(engine.complete({ messages: [{ role: "user", content: long }], tools: TOOLS }), { code: ErrorCode.ContextOverflow });
  t.equal(engine.stats().activeSessions, 0, "nothing admitted");
});

t.test("bad requests: unknown tool in a policy, bad tool names, empty prompt", async (t) => {
  const policy = { type: "lpt-dag" as const, calls: [{ id: "x", tool: "nope", arguments: {}, dependsOn: [] }] };
  t.equal(code(() => engine.createSession({ prompt: "p", tools: TOOLS, policy })), ErrorCode.UnknownTool);
  t.equal(code(() => engine.createSession({ prompt: "p", tools: [{ ...TOOLS[0]!, name: "bad name!" }] })), ErrorCode.BadRequest);
  t.equal(code(() => engine.createSession({ prompt: "", tools: TOOLS })), ErrorCode.BadRequest);
});

t.test("an invalid call becomes an error interrupt the model reads; nothing crashes", async (t) => {
  const s = engine.createSession({
    prompt: "bad calls",
    tools: TOOLS,
    policy: {
      type: "text",
      pieces: [
        '[CALL] u1 [HEAD] {"name": "nope", "arguments": {}} [END]',
        ' then [CALL] u2 [HEAD] {"name": "wait", "arguments": {"ms": "soon"}} [END]',
        " and [CALL] u3 [HEAD] {not json [END] done",
      ],
    },
  });
  const done = await s.finished;
  t.equal(done.reason, "eos");
  const errors = eventsOf(s.events, "call_error");
  t.same(errors.map((e) => [e.callId, e.code]), [["u1", "unknown_tool"], ["u2", "invalid_arguments"], ["u3", "malformed_call"]]);
  const intr = eventsOf(s.events, "interrupt");
  t.same(intr.map((i) => [i.id, i.kind]), [["u1", "tool_error"], ["u2", "tool_error"], ["u3", "tool_error"]], "each error is injected");
  t.match(intr[0]!.value, /^error: unknown_tool/);
  t.equal(eventsOf(s.events, "call").length, 0, "nothing reached the executor");
});

t.test("a user interrupt is injected into a running session", async (t) => {
  const s = engine.createSession({ prompt: "listen", tools: TOOLS, maxTokens: 60 });
  const off = s.subscribe((e) => {
    if (e.type === "text") {
      off();
      engine.interrupt(s.id, { id: "u_msg", kind: "user", value: "please stop" });
    }
  });
  const done = await s.finished;
  const intr = eventsOf(s.events, "interrupt");
  t.equal(intr.length, 1);
  t.equal(intr[0]?.id, "u_msg");
  t.equal(intr[0]?.kind, "user");
  t.equal(done.usage.injectedTokens, intr[0]?.tokens);
});
