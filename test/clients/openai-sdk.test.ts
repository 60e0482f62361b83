/**
 * Clients someone else wrote, against the engine's `/v1/chat/completions`
 * (real engine on the generated `test` model, the scripted policy passed as
 * the `interlace_policy` extension field, which both SDKs forward): the
 * official `openai` SDK runs a function-tool loop streaming and not, and the
 * OpenAI Agents SDK (`@openai/agents`) runs an agent with function tools
 * through its Chat Completions model, streaming and not. Errors reach the SDK
 * as its own `APIError` with our status and message.
 */
import { run, setTracingDisabled, type Agent } from "@openai/agents";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import t from "tap";
import { chatModel, runWeatherTool, WEATHER_POLICY, weatherAgent } from "./weather-agent.js";
import { startTestPod } from "../server/helpers.js";
import { ConformanceRecorder } from "../helpers/openai-conformance.js";

// Every answer the SDK gets is checked against OpenAI's published schemas (the last test asserts it).
const conformance = new ConformanceRecorder();

const { base } = await startTestPod(t);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0, fetch: conformance.fetch });
setTracingDisabled(true);

const tools: ChatCompletionTool[] = [
  { type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", description: "Time in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
];
const policy = WEATHER_POLICY;

t.test("openai SDK, non-streaming: a tool loop to the final answer", async (t) => {
  const messages: ChatCompletionMessageParam[] = [{ role: "user", content: "Weather and time in Paris?" }];
  const ran: string[] = [];
  for (let turn = 0; turn < 4; turn++) {
    const res = await client.chat.completions.create({ model: "interlace", messages, tools, tool_choice: "auto", parallel_tool_calls: true, max_tokens: 200, interlace_policy: policy } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const choice = res.choices[0]!;
    messages.push(choice.message);
    if (choice.finish_reason !== "tool_calls") {
      t.equal(choice.finish_reason, "stop");
      t.match(choice.message.content, /sunny at noon/);
      break;
    }
    for (const call of choice.message.tool_calls ?? []) {
      if (call.type !== "function") continue;
      ran.push(call.function.name);
      messages.push({ role: "tool", tool_call_id: call.id, content: runWeatherTool(call.function.name, JSON.parse(call.function.arguments) as { city: string }) });
    }
    t.ok(res.usage !== undefined && res.usage.total_tokens > 0, "usage on every response");
  }
  t.same(ran.sort(), ["get_time", "get_weather"]);
});

t.test("openai SDK, streaming: tool_calls deltas, finish_reason tool_calls, usage in the last chunk", async (t) => {
  const stream = await client.chat.completions.create({
    model: "interlace",
    messages: [{ role: "user", content: "Weather and time in Paris?" }],
    tools,
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: 200,
    interlace_policy: policy,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  const calls: { id?: string; name: string; args: string }[] = [];
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  let last: OpenAI.ChatCompletionChunk | undefined;
  for await (const chunk of stream) {
    last = chunk;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    for (const d of choice.delta.tool_calls ?? []) {
      const c = (calls[d.index] ??= { name: "", args: "" });
      if (d.id) c.id = d.id;
      c.name += d.function?.name ?? "";
      c.args += d.function?.arguments ?? "";
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  t.equal(finish, "tool_calls");
  t.same(calls.map((c) => [c.id, c.name, JSON.parse(c.args)]), [
    ["call_w", "get_weather", { city: "Paris" }],
    ["call_t", "get_time", { city: "Paris" }],
  ]);
  t.ok(usage !== undefined && usage.completion_tokens > 0, "usage chunk present");
  t.same(last?.choices, [], "the usage chunk is the last one and has no choices");
});

t.test("openai SDK: our errors arrive as the SDK's APIError with status and message", async (t) => {
  const err = await client.chat.completions.create({ model: "interlace", messages: [] }).catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.APIError, "an APIError");
  t.equal((err as InstanceType<typeof OpenAI.APIError>).status, 400);
  t.match((err as Error).message, /messages/);
});

function chatAgent(): Agent & { ran: string[] } {
  const ran: string[] = [];
  return Object.assign(weatherAgent(chatModel(client), ran, "Answer with the tools."), { ran });
}

t.test("OpenAI Agents SDK: an agent with function tools, non-streaming", async (t) => {
  const agent = chatAgent();
  const result = await run(agent, "Weather and time in Paris?");
  t.match(result.finalOutput, /sunny at noon/);
  t.same(agent.ran.sort(), ["get_time", "get_weather"]);
});

t.test("OpenAI Agents SDK: an agent with function tools, streaming", async (t) => {
  const agent = chatAgent();
  const result = await run(agent, "Weather and time in Paris?", { stream: true });
  let text = "";
  for await (const event of result.toTextStream()) text += event;
  await result.completed;
  t.match(result.finalOutput, /sunny at noon/);
  t.match(text, /sunny at noon/);
  t.same(agent.ran.sort(), ["get_time", "get_weather"]);
});

t.test("every answer conformed to OpenAI's published schemas", async (t) => conformance.assertConforms(t));
