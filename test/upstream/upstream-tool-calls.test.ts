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
 * completions (a `previous_response_id` follow-up included). And the
 * upstream's call, streamed in pieces (one per token), reaches the official
 * `openai` SDK in pieces: chat completions' tool_call deltas and Responses'
 * `function_call_arguments.delta` events, which add up to the final
 * arguments.
 */
import OpenAI from "openai";
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

  const http = new EngineServer({ engine, catalog: { builtins: new Map(), pools: true }, limits: DEFAULT_SERVER_LIMITS, metrics: new EngineMetrics(), log });
  const port = await http.listen(0, "127.0.0.1");
  t.teardown(() => http.close());
  const base = `http://127.0.0.1:${port}/v1`;
  const client = new OpenAI({ baseURL: base, apiKey: "unused", maxRetries: 0 });

  await t.test("POST /v1/responses on the openai backend: the conversation is re-sent to the upstream", async (t) => {
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

  await t.test("a streamed chat completion: the upstream's argument pieces reach the SDK as tool_call deltas", async (t) => {
    const stream = await client.chat.completions.create({
      model: server.model,
      messages: [{ role: "user", content: "Say a word with the echo tool." }],
      tools: [{ type: "function", function: { name: ECHO.name, description: ECHO.description, parameters: ECHO.parameters } }],
      tool_choice: { type: "function", function: { name: "echo" } },
      max_tokens: 48,
      temperature: 0,
      stream: true,
    });
    const indexes = new Set<number>();
    const heads: (string | undefined)[] = [];
    const pieces: string[] = [];
    let headless = 0;
    let finishReason: string | null | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      for (const call of choice?.delta.tool_calls ?? []) {
        indexes.add(call.index);
        if (call.id !== undefined) heads.push(call.function?.name);
        if (call.function?.arguments === undefined || call.function.arguments === "") continue;
        if (heads.length === 0) headless++;
        pieces.push(call.function.arguments);
      }
      finishReason = choice?.finish_reason ?? finishReason;
    }
    t.same([...indexes], [0], "one call");
    t.same(heads, ["echo"], "its id and name once");
    t.equal(headless, 0, "no arguments before the id and name");
    t.ok(pieces.length > 1, `the arguments arrived in ${pieces.length} pieces: ${JSON.stringify(pieces)}`);
    const word = (JSON.parse(pieces.join("")) as { text?: string }).text;
    t.ok(word === "hello" || word === "world", `the pieces add up to arguments held to the schema: ${pieces.join("")}`);
    t.equal(finishReason, "tool_calls");
  });

  await t.test("a streamed response: function_call_arguments.delta events as the upstream streams, .done with their sum", async (t) => {
    const stream = await client.responses.create({
      model: server.model,
      input: "Say a word with the echo tool.",
      tools: [{ type: "function", name: ECHO.name, description: ECHO.description, parameters: ECHO.parameters, strict: false }],
      tool_choice: { type: "function", name: "echo" },
      max_output_tokens: 48,
      temperature: 0,
      stream: true,
    });
    const order: string[] = [];
    const deltas: string[] = [];
    let done: string | undefined;
    let final: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      if (e.type.startsWith("response.function_call_arguments") || e.type.startsWith("response.output_item")) order.push(e.type);
      if (e.type === "response.function_call_arguments.delta") deltas.push(e.delta);
      if (e.type === "response.function_call_arguments.done") done = e.arguments;
      if (e.type === "response.completed") final = e.response;
    }
    t.ok(deltas.length > 1, `the arguments arrived in ${deltas.length} deltas: ${JSON.stringify(deltas)}`);
    t.equal(deltas.join(""), done, "the deltas concatenate to the final arguments");
    const call = final?.output.find((o) => o.type === "function_call");
    t.equal(call?.type === "function_call" ? call.arguments : undefined, done, "the completed response carries the same arguments");
    t.equal(call?.type === "function_call" ? call.name : undefined, "echo");
    t.same([order[0], order.at(-2), order.at(-1)], ["response.output_item.added", "response.function_call_arguments.done", "response.output_item.done"]);
  });
});
