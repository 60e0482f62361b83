/**
 * @module The generation parameters through the official `openai` npm SDK,
 * against a real engine pod on the generated `test` model (random weights:
 * it never calls a tool or writes JSON of its own accord): forced and named
 * tool calls, `parallel_tool_calls: false`, structured outputs on a nested
 * schema (streamed and not, chat completions and Responses, and an Agents
 * SDK agent's `outputType`), `stop`, `n`, streamed argument deltas; and the
 * README's parameter tables, checked against the code's.
 */
import { readFile } from "node:fs/promises";
import { Agent, run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import type { ChatCompletionTool } from "openai/resources/chat/completions";
import t from "tap";
import { z } from "zod";
import { compileSchema } from "../../common/src/wire/validator.js";
import { CHAT_COMPLETIONS_PARAMETERS, RESPONSES_PARAMETERS, type ParameterRow } from "../../engine-pod/src/server/openai-parameters.js";
import { startTestPod } from "../server/helpers.js";
import { ConformanceRecorder } from "../helpers/openai-conformance.js";

// Every answer the SDK gets is checked against OpenAI's published schemas (the last test asserts it).
const conformance = new ConformanceRecorder();
import { chatModel, responsesModel } from "./weather-agent.js";

const { base } = await startTestPod(t);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0, fetch: conformance.fetch });

const tools: ChatCompletionTool[] = [
  { type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string", maxLength: 10 } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", description: "Time in a city", parameters: { type: "object", properties: { city: { type: "string", maxLength: 10 } }, required: ["city"] } } },
];
const user = [{ role: "user" as const, content: "Weather in Paris?" }];
const FORECAST = {
  type: "object",
  properties: {
    city: { type: "string", maxLength: 10 },
    days: { type: "array", maxItems: 3, items: { type: "object", properties: { day: { type: "string", enum: ["mon", "tue"] }, high: { type: "integer" } }, required: ["day", "high"] } },
  },
  required: ["city", "days"],
  additionalProperties: false,
};
const valid = compileSchema<unknown>(FORECAST, "answer");

t.test("tool_choice required and named: the completion is a call, of the named function", async (t) => {
  const auto = await client.chat.completions.create({ model: "m", messages: user, tools, temperature: 0.8, seed: 3, max_tokens: 80 });
  t.equal(auto.choices[0]?.message.tool_calls, undefined, "left to itself the model calls nothing");
  const required = await client.chat.completions.create({ model: "m", messages: user, tools, tool_choice: "required", temperature: 0.8, seed: 3, max_tokens: 120 });
  t.equal(required.choices[0]?.finish_reason, "tool_calls");
  t.ok((required.choices[0]?.message.tool_calls?.length ?? 0) >= 1);
  for (const seed of [1, 2]) {
    const named = await client.chat.completions.create({ model: "m", messages: user, tools, tool_choice: { type: "function", function: { name: "get_time" } }, temperature: 0.8, seed, max_tokens: 120 });
    const calls = named.choices[0]?.message.tool_calls ?? [];
    t.ok(calls.length >= 1 && calls.every((c) => c.type === "function" && c.function.name === "get_time"), `seed ${seed}: ${calls.map((c) => (c.type === "function" ? c.function.name : c.type)).join(",")}`);
    t.equal(named.choices[0]?.finish_reason, "tool_calls");
  }
});

t.test("parallel_tool_calls: false gives one call", async (t) => {
  const r = await client.chat.completions.create({ model: "m", messages: user, tools, tool_choice: "required", parallel_tool_calls: false, temperature: 0.8, seed: 5, max_tokens: 200 });
  t.equal(r.choices[0]?.message.tool_calls?.length, 1);
});

t.test("response_format json_schema: the content validates, streamed and not", async (t) => {
  const format = { type: "json_schema" as const, json_schema: { name: "forecast", schema: FORECAST, strict: true } };
  const r = await client.chat.completions.create({ model: "m", messages: user, response_format: format, temperature: 1, seed: 2, max_tokens: 300 });
  t.equal(r.choices[0]?.finish_reason, "stop");
  const checked = valid(JSON.parse(r.choices[0]?.message.content ?? ""));
  t.ok(checked.ok, checked.ok ? r.choices[0]?.message.content ?? "" : checked.error);
  const stream = await client.chat.completions.create({ model: "m", messages: user, response_format: format, temperature: 1, seed: 4, max_tokens: 300, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  t.ok(valid(JSON.parse(text)).ok, `streamed: ${text}`);
  const object = await client.chat.completions.create({ model: "m", messages: user, tools, response_format: { type: "json_object" }, temperature: 0, max_tokens: 300 });
  t.ok(object.choices[0]?.message.tool_calls !== undefined || JSON.parse(object.choices[0]?.message.content ?? "") !== null, "with tools: a call or a JSON object");
});

t.test("stop: the content ends before the stop sequence", async (t) => {
  const full = await client.chat.completions.create({ model: "m", messages: user, max_tokens: 40 });
  const text = full.choices[0]?.message.content ?? "";
  const stop = text.slice(10, 13);
  const cut = await client.chat.completions.create({ model: "m", messages: user, max_tokens: 40, stop: [stop] });
  t.equal(cut.choices[0]?.message.content, text.slice(0, text.indexOf(stop)));
  t.equal(cut.choices[0]?.finish_reason, "stop");
});

t.test("Responses: a named tool_choice, text.format json_schema, both echoed", async (t) => {
  const flat = tools.map((x) => (x.type === "function" ? { type: "function" as const, name: x.function.name, description: x.function.description ?? "", parameters: x.function.parameters ?? {}, strict: false } : undefined)).filter((x) => x !== undefined);
  const called = await client.responses.create({ model: "m", input: "Time in Paris?", tools: flat, tool_choice: { type: "function", name: "get_time" }, temperature: 0, max_output_tokens: 120 });
  const calls = called.output.filter((o) => o.type === "function_call");
  t.ok(calls.length >= 1 && calls.every((c) => c.name === "get_time"), calls.map((c) => c.name).join(","));
  t.same(called.tool_choice, { type: "function", name: "get_time" });
  const format = { type: "json_schema" as const, name: "forecast", schema: FORECAST, strict: true };
  const answered = await client.responses.create({ model: "m", input: "The forecast?", text: { format }, temperature: 0, max_output_tokens: 300 });
  t.ok(valid(JSON.parse(answered.output_text)).ok, answered.output_text);
  t.same(answered.text?.format, format);
  const err = await client.responses.create({ model: "m", input: "x", truncation: "auto" }).catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.BadRequestError);
  t.match((err as Error).message, /"truncation" is not supported/);
});

t.test("Responses streaming: a forced call's arguments arrive as the model writes them, and the deltas add up", async (t) => {
  const flat = [{ type: "function" as const, name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string", maxLength: 10 } }, required: ["city"] }, strict: false }];
  const stream = await client.responses.create({ model: "m", input: "Weather in Paris?", tools: flat, tool_choice: "required", temperature: 0, max_output_tokens: 120, stream: true });
  const order: string[] = [];
  let deltas = "";
  let count = 0;
  let done: string | undefined;
  let final: OpenAI.Responses.Response | undefined;
  for await (const e of stream) {
    if (e.type.startsWith("response.function_call_arguments") || e.type.startsWith("response.output_item")) order.push(e.type);
    if (e.type === "response.function_call_arguments.delta") (deltas += e.delta), count++;
    if (e.type === "response.function_call_arguments.done") done = e.arguments;
    if (e.type === "response.completed") final = e.response;
  }
  t.ok(count > 1, `${count} deltas`);
  t.equal(deltas, done, "the deltas concatenate to the final arguments");
  t.same(JSON.parse(done ?? ""), JSON.parse(final?.output.find((o) => o.type === "function_call")?.type === "function_call" ? (final.output.find((o) => o.type === "function_call") as { arguments: string }).arguments : "null"));
  t.equal(order[0], "response.output_item.added");
  t.equal(order.at(-1), "response.output_item.done");
  t.equal(order.at(-2), "response.function_call_arguments.done");
});

t.test("n = 3: three choices from one prefill (the others fork the first's cells)", async (t) => {
  const { base: wide } = await startTestPod(t, ["--sequences", "4"]);
  const many = new OpenAI({ baseURL: `${wide}/v1`, apiKey: "unused", maxRetries: 0, fetch: conformance.fetch });
  const long = [{ role: "user" as const, content: `Summarise: ${"the quick brown fox jumps over the lazy dog. ".repeat(12)}` }];
  const r = await many.chat.completions.create({ model: "m", messages: long, n: 3, temperature: 1, seed: 7, max_tokens: 12 });
  t.same(r.choices.map((c) => c.index), [0, 1, 2]);
  t.equal(new Set(r.choices.map((c) => c.message.content)).size, 3, "three different samples (seed, seed + 1, seed + 2)");
  const ext = (r as unknown as { interlace: { prefilled_tokens: number; prefill_saved_tokens: number } }).interlace;
  const prompt = r.usage?.prompt_tokens ?? 0;
  t.ok(ext.prefill_saved_tokens >= 2 * prompt * 0.9, `saved ${ext.prefill_saved_tokens} of ${3 * prompt} prompt tokens (prefilled ${ext.prefilled_tokens})`);
  t.equal(r.usage?.completion_tokens, 36, "the completions summed, the prompt counted once");
  const single = await many.chat.completions.create({ model: "m", messages: long, temperature: 1, seed: 8, max_tokens: 12 });
  t.equal(single.choices[0]?.message.content, r.choices[1]?.message.content, "choice 1 is what seed + 1 gives alone");
  const stream = await many.chat.completions.create({ model: "m", messages: long, n: 2, temperature: 1, seed: 7, max_tokens: 12, stream: true });
  const texts = ["", ""];
  const finished = new Set<number>();
  for await (const c of stream) {
    for (const choice of c.choices) {
      texts[choice.index] += choice.delta.content ?? "";
      if (choice.finish_reason !== null) finished.add(choice.index);
    }
  }
  t.same(texts, [r.choices[0]?.message.content, r.choices[1]?.message.content], "streamed choices interleave by index");
  t.same([...finished].sort(), [0, 1]);
});

t.test("Agents SDK: an agent's outputType is met by the answer grammar, through Responses and Chat Completions", async (t) => {
  setTracingDisabled(true);
  const Forecast = z.object({ city: z.string().max(10), days: z.array(z.object({ day: z.enum(["mon", "tue"]), high: z.number().int() })).max(3) });
  for (const [name, model] of [["Responses", responsesModel(client)], ["Chat Completions", chatModel(client)]] as const) {
    const agent = new Agent({ name: "forecaster", instructions: "Give the forecast.", model, modelSettings: { maxTokens: 300, temperature: 0 }, outputType: Forecast });
    const result = await run(agent, "The forecast for Paris?");
    const parsed = Forecast.safeParse(result.finalOutput);
    t.ok(parsed.success, `${name}: finalOutput is a Forecast: ${JSON.stringify(result.finalOutput)}`);
  }
});

t.test("the README's tables list every parameter with what the code does", async (t) => {
  const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
  const section = (title: string): string => {
    const start = readme.indexOf(`### ${title}\n`, readme.indexOf("## OpenAI parameters: applied or refused"));
    t.ok(start > 0, `a "${title}" table`);
    return readme.slice(start, readme.indexOf("\n\n", readme.indexOf("| --- |", start)));
  };
  const rows = (text: string): Map<string, string> => new Map([...text.matchAll(/^\| `([a-z_]+)` \| ([a-z ]+) \|/gm)].map((m) => [m[1]!, m[2]!]));
  const check = (title: string, table: Readonly<Record<string, ParameterRow>>): void => {
    const documented = rows(section(title));
    t.same([...documented.keys()].sort(), Object.keys(table).sort(), `${title}: the same parameters`);
    for (const [key, row] of Object.entries(table)) t.equal(documented.get(key), row.support, `${title}: ${key}`);
  };
  check("Chat completions", CHAT_COMPLETIONS_PARAMETERS);
  check("Responses", RESPONSES_PARAMETERS);
});

t.test("every answer conformed to OpenAI's published schemas", async (t) => conformance.assertConforms(t));
