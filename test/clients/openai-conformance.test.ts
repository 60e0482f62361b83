/**
 * Conformance against OpenAI's published OpenAPI specification: the official
 * `openai` SDK drives a real router (its `/v1/apps/{ns}/{app}` endpoints)
 * and the real engine behind it (directly) over the main variants of chat
 * completions and Responses, and every raw answer and every server-sent
 * event is checked, as it reaches the SDK, against the spec's schema for it
 * (the vendored subset in `test/fixtures/openai-openapi/`): chat completions
 * streamed and not, with and without tools, forced and named `tool_choice`,
 * `n = 3`, `response_format` json_schema, `stop`; Responses created,
 * streamed, with a function call answered by `function_call_output` through
 * `previous_response_id`, read back, listed (`input_items`), deleted and
 * cancelled (through the router as on the engine); and the errors of each in OpenAI's error shape.
 */
import OpenAI from "openai";
import type { ChatCompletionCreateParams, ChatCompletionTool } from "openai/resources/chat/completions";
import type { FunctionTool, ResponseFunctionToolCall } from "openai/resources/responses/responses";
import t, { type Test } from "tap";
import { appConfig, startStack } from "../router/fixtures.js";
import { ConformanceRecorder } from "../helpers/openai-conformance.js";
import { SPEC_SCHEMAS, type SpecSchemaName } from "../helpers/openai-spec.js";
import { CITY_SCHEMA, outputsFor, WEATHER_POLICY } from "./weather-agent.js";

t.setTimeout(600_000);

// A short city: the generated model's forced calls end well within the token limit.
const CITY = { ...CITY_SCHEMA, properties: { city: { type: "string", maxLength: 10 } } };
const WEATHER_TOOLS = [
  { name: "get_weather", description: "Weather of a city", parameters: CITY, estimatedLatencyMs: 800 },
  { name: "get_time", description: "Time in a city", parameters: CITY, estimatedLatencyMs: 10 },
];
const FORECAST = {
  type: "object",
  properties: { city: { type: "string", maxLength: 10 }, high: { type: "integer" } },
  required: ["city", "high"],
  additionalProperties: false,
};

const stack = await startStack(t, { engines: 1, routers: 1, engineArgs: ["--sequences", "6"] });
await stack.putApp(appConfig("plain", { tools: [] }));
await stack.putApp(appConfig("weather", { tools: WEATHER_TOOLS }));
const engineUrl = [...stack.engines.values()][0]!.url;
const recorder = new ConformanceRecorder();
const clientAt = (baseURL: string): OpenAI => new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, fetch: recorder.fetch });

interface Target {
  name: "router" | "engine";
  plain: OpenAI;
  weather: OpenAI;
  /** The tools the client sends (the router's apps set their own). */
  chatTools?: ChatCompletionTool[];
  responseTools: FunctionTool[];
}

/** Where the variants run: through the router's app endpoints, and on the engine directly. */
const TARGETS: Target[] = [
  { name: "router", plain: clientAt(`${stack.url(0)}/v1/apps/default/plain`), weather: clientAt(`${stack.url(0)}/v1/apps/default/weather`), responseTools: [] },
  {
    name: "engine",
    plain: clientAt(`${engineUrl}/v1`),
    weather: clientAt(`${engineUrl}/v1`),
    chatTools: WEATHER_TOOLS.map((x) => ({ type: "function", function: { name: x.name, description: x.description, parameters: x.parameters } })),
    responseTools: WEATHER_TOOLS.map((x) => ({ type: "function", name: x.name, description: x.description, parameters: x.parameters, strict: false })),
  },
];

/** Runs `body`, then asserts that it produced checks of each of `schemas` and that all of them conform. */
async function variant(t: Test, schemas: readonly SpecSchemaName[], body: () => Promise<void>): Promise<void> {
  const since = recorder.checks.length;
  await body();
  const seen = new Set(recorder.checks.slice(since).map((c) => c.schema));
  t.same(schemas.filter((s) => !seen.has(s)), [], `checked against ${schemas.join(", ")}`);
  recorder.assertConforms(t, since);
}

const user = [{ role: "user" as const, content: "Weather in Paris?" }];
type ChatBody = Omit<ChatCompletionCreateParams, "model"> & Record<string, unknown>;

for (const target of TARGETS) {
  const tools = target.chatTools !== undefined ? { tools: target.chatTools } : {};
  const chat = (client: OpenAI, body: ChatBody) => client.chat.completions.create({ model: "interlace", ...body, stream: false } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  const chatStream = async (client: OpenAI, body: ChatBody): Promise<OpenAI.ChatCompletionChunk[]> => {
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of await client.chat.completions.create({ model: "interlace", ...body, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)) chunks.push(c);
    return chunks;
  };

  t.test(`${target.name}: chat completions`, async (t) => {
    await t.test("text, streamed and not (usage chunk included)", (t) =>
      variant(t, ["CreateChatCompletionResponse", "CreateChatCompletionStreamResponse"], async () => {
        const r = await chat(target.plain, { messages: user, max_tokens: 8 });
        t.equal(r.choices.length, 1);
        const chunks = await chatStream(target.plain, { messages: user, max_tokens: 8, stream_options: { include_usage: true } });
        t.ok(chunks.at(-1)?.usage !== undefined, "the usage chunk");
      }),
    );
    await t.test("tools: a call loop, streamed and not", (t) =>
      variant(t, ["CreateChatCompletionResponse", "CreateChatCompletionStreamResponse"], async () => {
        const r = await chat(target.weather, { messages: user, ...tools, max_tokens: 200, interlace_policy: WEATHER_POLICY });
        t.equal(r.choices[0]?.finish_reason, "tool_calls");
        const calls = r.choices[0]?.message.tool_calls ?? [];
        const answered = await chat(target.weather, {
          messages: [...user, r.choices[0]!.message, ...calls.map((c) => ({ role: "tool" as const, tool_call_id: c.id, content: "sunny" }))],
          ...tools,
          max_tokens: 200,
          interlace_policy: WEATHER_POLICY,
        });
        t.equal(answered.choices[0]?.finish_reason, "stop");
        const chunks = await chatStream(target.weather, { messages: user, ...tools, max_tokens: 200, interlace_policy: WEATHER_POLICY });
        t.ok(chunks.some((c) => (c.choices[0]?.delta.tool_calls?.length ?? 0) > 0), "tool_calls deltas");
      }),
    );
    await t.test("tool_choice required and named", (t) =>
      variant(t, ["CreateChatCompletionResponse", "CreateChatCompletionStreamResponse"], async () => {
        const required = await chat(target.weather, { messages: user, ...tools, tool_choice: "required", temperature: 0.8, seed: 3, max_tokens: 120 });
        t.equal(required.choices[0]?.finish_reason, "tool_calls");
        const named = await chatStream(target.weather, { messages: user, ...tools, tool_choice: { type: "function", function: { name: "get_time" } }, temperature: 0.8, seed: 1, max_tokens: 120 });
        t.equal(named.findLast((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, "tool_calls");
      }),
    );
    await t.test("n = 3, streamed and not", (t) =>
      variant(t, ["CreateChatCompletionResponse", "CreateChatCompletionStreamResponse"], async () => {
        const r = await chat(target.plain, { messages: user, n: 3, temperature: 1, seed: 7, max_tokens: 8 });
        t.same(r.choices.map((c) => c.index), [0, 1, 2]);
        const chunks = await chatStream(target.plain, { messages: user, n: 3, temperature: 1, seed: 7, max_tokens: 8 });
        t.same([...new Set(chunks.flatMap((c) => c.choices.map((x) => x.index)))].sort(), [0, 1, 2]);
      }),
    );
    await t.test("response_format json_schema, and stop", (t) =>
      variant(t, ["CreateChatCompletionResponse", "CreateChatCompletionStreamResponse"], async () => {
        const format = { type: "json_schema" as const, json_schema: { name: "forecast", schema: FORECAST, strict: true } };
        const r = await chat(target.plain, { messages: user, response_format: format, temperature: 0, max_tokens: 200 });
        t.ok(JSON.parse(r.choices[0]?.message.content ?? "") !== null);
        await chatStream(target.plain, { messages: user, response_format: format, temperature: 0, max_tokens: 200 });
        const stopped = await chat(target.plain, { messages: user, stop: ["e"], max_tokens: 30 });
        t.notMatch(stopped.choices[0]?.message.content ?? "", /e/, "the text ends before the stop sequence");
      }),
    );
    await t.test("errors: a 400 in OpenAI's error shape", (t) =>
      variant(t, ["ErrorResponse"], async () => {
        const err = await chat(target.plain, { messages: [] }).catch((e: unknown) => e);
        t.ok(err instanceof OpenAI.BadRequestError);
      }),
    );
  });

  t.test(`${target.name}: Responses`, async (t) => {
    const create = (client: OpenAI, body: Record<string, unknown>) =>
      client.responses.create({ model: "interlace", max_output_tokens: 200, ...body, stream: false } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    const stream = async (client: OpenAI, body: Record<string, unknown>): Promise<OpenAI.Responses.ResponseStreamEvent[]> => {
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      const s = await client.responses.create({ model: "interlace", max_output_tokens: 200, ...body, stream: true } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
      for await (const e of s) events.push(e);
      return events;
    };
    const tools = target.responseTools.length > 0 ? { tools: target.responseTools } : {};

    await t.test("text, streamed and not, and read back", (t) =>
      variant(t, ["Response", "ResponseStreamEvent"], async () => {
        const r = await create(target.plain, { input: "Say hi.", max_output_tokens: 8 });
        t.match(r.status, /^(completed|incomplete)$/);
        const events = await stream(target.plain, { input: "Say hi.", max_output_tokens: 8 });
        t.equal(events[0]?.type, "response.created");
        t.equal((await target.plain.responses.retrieve(r.id)).id, r.id);
      }),
    );
    await t.test("a function call, answered by function_call_output through previous_response_id, streamed and not", (t) =>
      variant(t, ["Response", "ResponseStreamEvent"], async () => {
        const r1 = await create(target.weather, { input: "Weather and time in Paris?", ...tools, interlace_policy: WEATHER_POLICY });
        const calls = r1.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");
        t.equal(calls.length, 2);
        const r2 = await create(target.weather, { previous_response_id: r1.id, input: outputsFor(calls), ...tools, interlace_policy: WEATHER_POLICY });
        t.match(r2.output_text, /sunny at noon/);
        const events = await stream(target.weather, { input: "Weather and time in Paris?", ...tools, interlace_policy: WEATHER_POLICY });
        t.ok(events.some((e) => e.type === "response.function_call_arguments.delta"));
        const done = events.findLast((e) => e.type === "response.completed");
        const streamedCalls = done?.type === "response.completed" ? done.response.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call") : [];
        const follow = await stream(target.weather, { previous_response_id: done?.type === "response.completed" ? done.response.id : "", input: outputsFor(streamedCalls), ...tools, interlace_policy: WEATHER_POLICY });
        t.equal(follow.at(-1)?.type, "response.completed");
      }),
    );
    await t.test("a forced call and text.format json_schema", (t) =>
      variant(t, ["Response", "ResponseStreamEvent"], async () => {
        const forced = await stream(target.weather, { input: "Time in Paris?", ...tools, tool_choice: { type: "function", name: "get_time" }, temperature: 0, max_output_tokens: 120 });
        t.equal(forced.at(-1)?.type, "response.completed");
        const format = { type: "json_schema", name: "forecast", schema: FORECAST, strict: true };
        const answered = await create(target.plain, { input: "The forecast?", text: { format }, temperature: 0 });
        t.ok(JSON.parse(answered.output_text) !== null);
      }),
    );
    await t.test("errors: an unknown previous_response_id, in OpenAI's error shape", (t) =>
      variant(t, ["ErrorResponse"], async () => {
        const err = await create(target.plain, { previous_response_id: "resp_nope", input: "hi" }).catch((e: unknown) => e);
        t.ok(err instanceof OpenAI.NotFoundError);
      }),
    );
    await t.test("input_items, delete and cancel", (t) =>
      variant(t, ["Response", "ResponseStreamEvent", "ResponseItemList", "DeleteResponse", "ErrorResponse"], async () => {
        // Messages of each role and content form: listed back as item resources.
        const input = [
          { role: "user", content: "Hello." },
          { type: "message", role: "assistant", content: "Hi." },
          { type: "message", role: "user", content: [{ type: "input_text", text: "Weather and time in Paris?" }] },
        ];
        const r1 = await create(target.weather, { input, ...tools, interlace_policy: WEATHER_POLICY });
        const calls = r1.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");
        const r2 = await create(target.weather, { previous_response_id: r1.id, input: outputsFor(calls), ...tools, interlace_policy: WEATHER_POLICY });
        const first = await target.weather.responses.inputItems.list(r1.id, { order: "asc" });
        t.same(first.data.map((i) => (i.type === "message" ? [i.role, i.content.map((c) => c.type)] : i.type)), [["user", ["input_text"]], ["assistant", ["output_text"]], ["user", ["input_text"]]]);
        const items = await target.weather.responses.inputItems.list(r2.id, { order: "asc" });
        t.same(items.data.map((i) => i.type), ["function_call_output", "function_call_output"]);
        const past = await target.weather.responses.inputItems.list(r2.id, { order: "asc", after: items.data.at(-1)?.id ?? "" });
        t.same(past.data, [], "a page past the last item is empty");
        await target.weather.responses.delete(r1.id);
        t.ok((await target.weather.responses.delete(r1.id).catch((e: unknown) => e)) instanceof OpenAI.NotFoundError);
        t.ok((await target.weather.responses.cancel(r2.id).catch((e: unknown) => e)) instanceof OpenAI.BadRequestError, "a finished response cannot be cancelled");
        const pieces = Array.from({ length: 400 }, (_, i) => ` word ${i}`);
        const s = await target.plain.responses.create({ model: "m", input: "Talk.", max_output_tokens: 256, stream: true, interlace_policy: { type: "text", pieces } } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
        let cancelled: OpenAI.Responses.Response | undefined;
        let id = "";
        const types: string[] = [];
        for await (const e of s) {
          types.push(e.type);
          if (e.type === "response.created") id = e.response.id;
          if (e.type === "response.output_text.delta" && cancelled === undefined) cancelled = await target.plain.responses.cancel(id);
        }
        t.equal(cancelled?.status, "cancelled");
        t.equal(types.at(-1), "response.failed", "the stream ends with the cancelled response");
      }),
    );
  });
}

t.test("every schema Interlace answers with was checked, and nothing broke one", async (t) => {
  const seen = new Set(recorder.checks.map((c) => c.schema));
  t.same(SPEC_SCHEMAS.filter((s) => !seen.has(s)), [], "each of the spec's schemas was checked at least once");
  recorder.assertConforms(t);
});
