/**
 * The `openai` backend against a real third-party server (llama.cpp's server
 * from llama-cpp-python, `hack/tools/70-llama-server.sh`) on the generated
 * `test` model, tools run by a real tool runner over a real nats-server:
 * sync, syncParallel and asyncNaive sessions replaying a scripted LPT policy
 * (each upstream request held to its text by a grammar, every token a real
 * forward pass upstream); `async` refused with its reason; an upstream
 * killed mid-stream, one slower than the deadline, and one not listening
 * each end the session with a clear error.
 */
import t from "tap";
import { createLogger, ErrorCode, InterlaceError, type CallingMode, type CreateSessionRequest, type SessionEvent, type ToolSpec } from "../../common/src/index.js";
import { UpstreamEngine, ASYNC_NEEDS_OWN_ENGINE } from "../../engine-pod/src/upstream/index.js";
import type { UpstreamOptions } from "../../engine-pod/src/upstream/index.js";
import type { Executor } from "../../engine-pod/src/executor/index.js";
import { freePort } from "../../hack/nats.js";
import { UpstreamServer } from "../../hack/upstream-server.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { POOL, startExecutor, startRunner } from "../nats/fixtures.js";

const log = createLogger("upstream-test", process.env["LOG_LEVEL"] ?? "silent");
const TOOLS: ToolSpec[] = [
  { name: "sleep", description: "waits ms", parameters: { type: "object", properties: { ms: { type: "integer" }, result: { type: "string" } }, required: ["ms"] }, pool: POOL },
  { name: "echo", description: "echoes", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }, pool: POOL },
];

function scripted(mode: CallingMode): CreateSessionRequest {
  return {
    prompt: "look two things up",
    tools: TOOLS,
    mode,
    temperature: 0,
    maxTokens: 400,
    policy: {
      type: "lpt-dag",
      calls: [
        { id: "slow", tool: "sleep", arguments: { ms: 300, result: "found" }, dependsOn: [], estimatedLatencyMs: 300 },
        { id: "quick", tool: "echo", arguments: { text: "hi" }, dependsOn: [], estimatedLatencyMs: 1 },
        { id: "after", tool: "echo", arguments: { text: "then" }, dependsOn: ["quick"], estimatedLatencyMs: 1 },
      ],
      finalText: " done",
    },
  };
}

function engineOn(upstream: Partial<UpstreamOptions> & { url: string }, executor: Executor, sessions = 4): UpstreamEngine {
  return new UpstreamEngine(
    { upstream: { model: "interlace-test", timeoutMs: 60_000, retries: 1, ...upstream }, maxSessions: sessions, maxTokens: 256, contextSize: 8192 },
    executor,
    log,
  );
}

/** A long answer the upstream must write (held by the grammar: plain ASCII, so it streams token by token). */
const LONG: CreateSessionRequest = { prompt: "write a lot", mode: "sync", maxTokens: 6000, temperature: 0, policy: { type: "lpt-dag", calls: [], finalText: " word".repeat(1200) } };

const kinds = (events: readonly SessionEvent[]): string[] => events.map((e) => e.type);

t.test("openai backend over llama.cpp's server", async (t) => {
  const nats = await startNatsServer(t);
  await startRunner(t, nats.url);
  const executor = await startExecutor(t, nats.url, { enginePod: "upstream-test" });
  const server = await UpstreamServer.start({ preset: "test" });
  t.teardown(() => server.stop());
  const engine = engineOn({ url: server.url }, executor);
  t.teardown(() => engine.close());

  for (const [mode, expectRequests] of [
    ["sync", 4],
    ["syncParallel", 3],
  ] as const) {
    await t.test(`${mode}: one request per turn, calls over NATS, results as tool messages`, async (t) => {
      const s = engine.createSession(scripted(mode));
      const done = await s.finished;
      t.equal(done.reason, "eos", JSON.stringify(s.events.filter((e) => e.type === "error")));
      const calls = s.events.flatMap((e) => (e.type === "call" ? [e.callId] : []));
      t.same(calls, ["slow", "quick", "after"], "LPT order: longest ready call first");
      const intr = s.events.flatMap((e) => (e.type === "interrupt" ? [[e.id, e.kind, e.value]] : []));
      t.same(intr.find((i) => i[0] === "slow"), ["slow", "tool_result", "found"]);
      t.same(intr.find((i) => i[0] === "after"), ["after", "tool_result", "then"]);
      t.equal(done.usage.upstream?.requests, expectRequests, "requests: the turns plus the final answer");
      t.equal(done.usage.calls, 3);
      t.ok(done.usage.decodedTokens > 10, "the upstream generated the call blocks");
      t.match(s.events.filter((e) => e.type === "text").map((e) => (e.type === "text" ? e.text : "")).join(""), /done/);
      t.equal(done.scripted, true);
    });
  }

  await t.test("asyncNaive: calls dispatched mid-stream, each arrival restarts the request", async (t) => {
    const s = engine.createSession(scripted("asyncNaive"));
    const done = await s.finished;
    t.equal(done.reason, "eos", JSON.stringify(s.events.filter((e) => e.type === "error")));
    const order = s.events.flatMap((e) => (e.type === "call" ? [`call:${e.callId}`] : e.type === "interrupt" ? [`intr:${e.id}`] : []));
    // Both independent calls go out before either result is in (the async part).
    t.same(order.slice(0, 2), ["call:slow", "call:quick"]);
    t.ok(order.indexOf("call:after") > order.indexOf("intr:quick"), "the dependent call waits for its dependency's result");
    t.equal(order.filter((o) => o.startsWith("intr:")).length, 3);
    t.ok((done.usage.upstream?.requests ?? 0) >= 3, "restarts: one request per arrival batch");
  });

  await t.test("unscripted sync session: the upstream model's own output, bounded by maxTokens", async (t) => {
    const s = engine.createSession({ prompt: "say something", tools: TOOLS, mode: "sync", maxTokens: 12, temperature: 0 });
    const done = await s.finished;
    t.ok(done.reason === "max_tokens" || done.reason === "eos", done.reason);
    t.equal(kinds(s.events)[0], "started");
    t.ok(done.usage.decodedTokens > 0 && done.usage.decodedTokens <= 12);
  });

  await t.test("async is refused with the reason", async (t) => {
    t.throws(() => engine.createSession({ ...scripted("async") }), new InterlaceError(ErrorCode.BadRequest, ASYNC_NEEDS_OWN_ENGINE));
  });

  await t.test("an upstream slower than --upstream-timeout-ms → upstream_timeout", async (t) => {
    const slow = engineOn({ url: server.url, timeoutMs: 300 }, executor);
    t.teardown(() => slow.close());
    const s = slow.createSession(LONG);
    const done = await s.finished;
    t.equal(done.reason, "error");
    const error = s.events.find((e) => e.type === "error");
    t.match(error, { code: ErrorCode.UpstreamTimeout, message: /did not finish within 300 ms/ });
  });

  await t.test("an upstream killed mid-stream → upstream_error, not retried", async (t) => {
    const s = engine.createSession(LONG);
    await new Promise<void>((resolve) => {
      const off = s.subscribe((e) => {
        if (e.type === "text") {
          off();
          resolve();
        }
      });
    });
    await server.kill();
    const done = await s.finished;
    t.equal(done.reason, "error");
    const error = s.events.find((e) => e.type === "error");
    t.match(error, { code: ErrorCode.UpstreamError, message: /mid-response|without a finish_reason/ });
    t.ok(done.usage.decodedTokens > 0, "what streamed before the crash was delivered and counted");
  });

  await t.test("nothing listening → upstream_unavailable after the retries", async (t) => {
    const port = await freePort();
    const refused = engineOn({ url: `http://127.0.0.1:${port}/v1`, retries: 2 }, executor);
    t.teardown(() => refused.close());
    const s = refused.createSession({ prompt: "hello", mode: "sync", maxTokens: 8 });
    const done = await s.finished;
    t.equal(done.reason, "error");
    t.match(s.events.find((e) => e.type === "error"), { code: ErrorCode.UpstreamUnavailable, message: /refused the connection/ });
  });
});
