/**
 * The shared wire pieces on their own: the error line the model reads, the
 * deadline race every tool executor runs, the protocol codec (body and
 * headers built in one place and read back), and the one validator's error
 * lines for HTTP bodies.
 */
import t from "tap";
import { runUnderDeadline, type StopReason } from "../../common/src/index.js";
import {
  encodeCall,
  encodeInterrupt,
  encodeResult,
  Header,
  parseCallMessage,
  parseIntrMessage,
  PROTOCOL_VERSION,
  readHeaders,
  type CallMessage,
  type ResultMessage,
} from "../../common/src/protocol/index.js";
import { errorOutcome, formatErrorLine, validateCreateSessionBody, validateInterruptBody } from "../../common/src/wire/index.js";

t.test("one error line: `error: <code>: <message>` on one line, the code once", async (t) => {
  t.equal(formatErrorLine("tool_failed", "boom"), "error: tool_failed: boom");
  t.equal(formatErrorLine("invalid_arguments", "invalid_arguments: \"a\" must be number"), 'error: invalid_arguments: "a" must be number');
  t.equal(formatErrorLine("no_runners", "no runner\n  for pool ns/p"), "error: no_runners: no runner for pool ns/p");
  t.same(errorOutcome("cancelled", "gone"), { ok: false, output: "error: cancelled: gone", error: { code: "cancelled", message: "gone" } });
});

t.test("the deadline race settles on value, error, timeout or cancellation, even when the tool ignores its signal", async (t) => {
  const ok = await runUnderDeadline(async () => "fine", { budgetMs: 1_000 });
  t.same(ok, { ok: true, value: "fine" });

  const thrown = await runUnderDeadline(async () => {
    throw new Error("bad");
  }, { budgetMs: 1_000 });
  t.ok(!thrown.ok && "error" in thrown && (thrown.error as Error).message === "bad", "a throw is an error outcome");

  let toolSignal: AbortSignal | undefined;
  const deaf = await runUnderDeadline((signal) => {
    toolSignal = signal;
    return new Promise<string>(() => undefined); // never settles, ignores its signal
  }, { budgetMs: 30 });
  t.same(deaf, { ok: false, stopped: { kind: "timeout", ms: 30 } }, "settles at the deadline anyway");
  t.equal(toolSignal?.aborted, true, "the tool's signal is aborted");

  const caller = new AbortController();
  setTimeout(() => caller.abort(), 10);
  const cancelled = await runUnderDeadline((signal) => new Promise<string>((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))), {
    budgetMs: 5_000,
    signal: caller.signal,
  });
  t.same(cancelled, { ok: false, stopped: { kind: "cancelled", why: "the call was cancelled" } });

  const own = new AbortController();
  const shutdown: StopReason = { kind: "cancelled", why: "shutting down" };
  setTimeout(() => own.abort(shutdown), 10);
  const mine = await runUnderDeadline(() => new Promise<string>(() => undefined), { budgetMs: 5_000, controller: own });
  t.ok(!mine.ok && "stopped" in mine && mine.stopped === shutdown, "a caller's own stop reason comes back as given");

  let finishedSignal: AbortSignal | undefined;
  await runUnderDeadline(async (signal) => {
    finishedSignal = signal;
    return 1;
  }, { budgetMs: 1_000 });
  t.equal(finishedSignal?.aborted, true, "a finished call's signal is released");
});

t.test("codec: messages and their headers round-trip, multi-byte text included", async (t) => {
  const text = "서울 날씨 · 東京 · 👍🏽 · café · שלום · مرحبا";
  const call: CallMessage = {
    v: PROTOCOL_VERSION,
    callId: "c1",
    sessionId: "s-1",
    tool: "translate",
    arguments: { text, nested: { list: ["é", "🎉"] } },
    deadline: 123,
    replyTo: "interlace.intr.ns.pod.s-1",
    publishedAt: 1,
  };
  const encoded = encodeCall(call, "call:pod:s-1:c1");
  t.equal(encoded.msgID, "call:pod:s-1:c1");
  t.same(readHeaders(encoded.headers), { protocol: String(PROTOCOL_VERSION), callId: "c1", sessionId: "s-1", replyTo: "interlace.intr.ns.pod.s-1" });
  t.equal(encoded.headers.get(Header.Deadline), "123");
  const back = parseCallMessage(new TextEncoder().encode(encoded.data));
  t.ok(back.ok && back.value.arguments["text"] === text, "arguments survive as UTF-8 bytes");
  t.same(back.ok && back.value, call);

  const result: ResultMessage = {
    v: PROTOCOL_VERSION,
    type: "result",
    callId: "c1",
    sessionId: "s-1",
    tool: "translate",
    runMs: 1,
    attempt: 1,
    runner: "r",
    ...errorOutcome("tool_failed", `translate failed: ${text}`),
  };
  const r = encodeResult(result, "result:x");
  t.equal(r.headers.get(Header.ErrorCode), "tool_failed", "a failed result carries its code in a header");
  t.equal(r.headers.get(Header.Kind), "result");
  const rb = parseIntrMessage(Buffer.from(r.data, "utf8"));
  t.ok(rb.ok && rb.value.type === "result" && rb.value.output === `error: tool_failed: translate failed: ${text}`);

  const i = encodeInterrupt({ v: PROTOCOL_VERSION, type: "interrupt", sessionId: "s-1", kind: "user", value: text });
  t.equal(i.msgID, undefined);
  t.equal(i.headers.get(Header.Kind), "interrupt");
  const ib = parseIntrMessage(i.data);
  t.ok(ib.ok && ib.value.type === "interrupt" && ib.value.value === text);
});

t.test("HTTP bodies: the one validator names the field and what was expected", async (t) => {
  const e = (r: { ok: boolean; error?: string }): string => (r.ok ? "" : (r.error ?? ""));
  t.match(e(validateCreateSessionBody({ prompt: "hi", mode: "turbo" })), /"mode" must be one of "async", "sync", "syncParallel"/);
  t.match(e(validateCreateSessionBody({ prompt: "hi", promt: "x" })), /unknown field "promt"/);
  t.match(e(validateCreateSessionBody({ prompt: "" })), /"prompt" must NOT have fewer than 1 characters/);
  t.match(e(validateCreateSessionBody({ prompt: "hi", policy: { type: "lpt-dag", calls: [{ id: "1x", tool: "a", arguments: {} }] } })), /"policy\.calls\[0\]\.id" must match pattern/);
  t.ok(validateCreateSessionBody({ prompt: [{ role: "user", content: "안녕 👋" }], temperature: 0, seed: 7 }).ok);
  t.ok(validateCreateSessionBody({ prompt: "hi", priority: 1 }).ok, "admission priority is accepted");
  t.match(e(validateCreateSessionBody({ prompt: "hi", priority: 1.5 })), /"priority" must be integer/);
  t.match(e(validateInterruptBody({ value: "x", id: "not an id" })), /"id" must match pattern/);
  t.ok(validateInterruptBody({ value: "🚀 مرحبا", kind: "user" }).ok);
});
