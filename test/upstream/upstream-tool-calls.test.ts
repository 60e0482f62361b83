/**
 * The upstream's own function calling, for real: llama.cpp's server
 * (llama-cpp-python) started with `--chat_format chatml-function-calling`,
 * which constrains the model's output to a call of the named function with a
 * grammar built from its JSON schema, returns it as streamed `tool_calls`,
 * and answers in plain text when no tool_choice is given. A sync and a
 * syncParallel session with `toolChoice: {name}` get the call from the
 * upstream, run it on a real tool runner over a real nats-server, send the
 * result back as a `tool` message and finish. Also: `POST /v1/responses` on
 * the openai backend re-sends the conversation to the upstream's chat
 * completions (a `previous_response_id` follow-up included).
 */
import t from "tap";
import { createLogger, ErrorCode, InterlaceError, type CallingMode, type ToolSpec } from "../../common/src/index.js";
import { UpstreamEngine } from "../../engine-pod/src/upstream/index.js";
import { EngineMetrics } from "../../engine-pod/src/metrics/index.js";
import { DEFAULT_SERVER_LIMITS, EngineServer } from "../../engine-pod/src/server/index.js";
import { UpstreamServer } from "../../hack/upstream-server.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { POOL, startExecutor, startRunner } from "../nats/fixtures.js";
import { postJson } from "../server/helpers.js";

const log = createLogger("upstream-tools-test", process.env["LOG_LEVEL"] ?? "silent");
// An enum keeps the grammar-constrained arguments short whatever the (random-weight) model prefers.
const ECHO: ToolSpec = {
  name: "echo",
  description: "echoes a word",
  parameters: { type: "object", properties: { text: { type: "string", enum: ["hello", "world"] } }, required: ["text"], additionalProperties: false },
  pool: POOL,
};

t.test("native tool_calls from llama.cpp's server (chatml-function-calling)", async (t) => {
  const nats = await startNatsServer(t);
  await startRunner(t, nats.url);
  const executor = await startExecutor(t, nats.url, { enginePod: "upstream-tools-test" });
  const server = await UpstreamServer.start({ preset: "test", chatFormat: "chatml-function-calling" });
  t.teardown(() => server.stop());
  const engine = new UpstreamEngine({ upstream: { url: server.url, model: server.model, timeoutMs: 120_000, retries: 1 }, maxSessions: 4, maxTokens: 64, contextSize: 8192 }, executor, log);
  t.teardown(() => engine.close());

  for (const mode of ["sync", "syncParallel"] as CallingMode[]) {
    await t.test(`${mode}: the upstream's tool_calls run on the tool pool, the answer follows`, async (t) => {
      const s = engine.createSession({ prompt: "Say a word with the echo tool.", tools: [ECHO], mode, toolChoice: { name: "echo" }, maxTokens: 48, temperature: 0 });
      const done = await s.finished;
      t.ok(done.reason === "eos" || done.reason === "max_tokens", `finished: ${done.reason} ${JSON.stringify(s.events.filter((e) => e.type === "error"))}`);
      const calls = s.events.flatMap((e) => (e.type === "call" ? [e] : []));
      t.equal(calls.length, 1, "one call, from the upstream's tool_calls");
      t.equal(calls[0]?.tool, "echo");
      const word = (calls[0]?.arguments as { text?: string } | undefined)?.text;
      t.ok(word === "hello" || word === "world", `arguments held to the schema: ${JSON.stringify(calls[0]?.arguments)}`);
      const result = s.events.find((e) => e.type === "interrupt" && e.id === calls[0]?.callId);
      t.match(result, { kind: "tool_result", value: word }, "the runner's result came back over NATS");
      t.equal(done.usage.calls, 1);
      t.equal(done.usage.upstream?.requests, 2, "the call turn, then the answer turn (tool_choice dropped)");
      t.equal(done.scripted, false);
    });
  }

  await t.test("toolChoice is refused where the upstream's function calling is not used", async (t) => {
    t.throws(() => engine.createSession({ prompt: "x", tools: [ECHO], mode: "asyncNaive", toolChoice: "required" }), { code: ErrorCode.BadRequest });
    t.throws(() => engine.createSession({ prompt: "x", tools: [ECHO], mode: "sync", toolChoice: { name: "nope" } }), new InterlaceError(ErrorCode.UnknownTool, `toolChoice names "nope", which is not one of the session's tools`));
  });

  await t.test("a session's responseFormat is refused here, never ignored", async (t) => {
    t.throws(() => engine.createSession({ prompt: "x", tools: [ECHO], mode: "sync", responseFormat: { type: "json_object" } }), /responseFormat: sessions on --backend openai/);
  });

  await t.test("POST /v1/responses on the openai backend: the conversation is re-sent to the upstream", async (t) => {
    const http = new EngineServer({ engine, catalog: { builtins: new Map(), pools: true }, limits: DEFAULT_SERVER_LIMITS, metrics: new EngineMetrics(), log });
    const port = await http.listen(0, "127.0.0.1");
    t.teardown(() => http.close());
    const base = `http://127.0.0.1:${port}/v1`;
    const first = await postJson(`${base}/responses`, { model: server.model, input: "Hello there.", max_output_tokens: 6, temperature: 0 });
    t.equal(first.status, 200, await first.clone().text());
    const r1 = (await first.json()) as { id: string; output: { type: string }[]; usage: { input_tokens: number } };
    t.equal(r1.output[0]?.type, "message");
    const second = await postJson(`${base}/responses`, { model: server.model, previous_response_id: r1.id, input: "Go on.", max_output_tokens: 6, temperature: 0 });
    t.equal(second.status, 200, await second.clone().text());
    const r2 = (await second.json()) as { previous_response_id: string; usage: { input_tokens: number }; interlace: { continued: boolean } };
    t.equal(r2.previous_response_id, r1.id);
    t.ok(r2.usage.input_tokens > r1.usage.input_tokens, "the first turn was sent again with the new input");
    t.equal(r2.interlace.continued, false, "no resident sequence here: the upstream's prefix cache is all there is");
  });
});
