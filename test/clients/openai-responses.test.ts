/**
 * `POST /v1/responses` with clients someone else wrote, on the real engine
 * (generated `test` model, the scripted policy riding in `interlace_policy`):
 * the official `openai` SDK runs a function-tool loop through
 * `previous_response_id`, streaming and not, and the OpenAI Agents SDK runs
 * an agent with its default Responses model, stateless and chained.
 *
 * The follow-up turn continues the resident sequence of the response it
 * names: the engine's own prefill counter grows by the new items only, even
 * after unrelated requests went through the engine in between (the retained
 * slot is not theirs to take). With retention off, the same follow-up
 * re-prefills its history. Unknown ids are 404s; bad input is a 400/413 in
 * OpenAI's error shape.
 */
import { run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import type { FunctionTool, ResponseFunctionToolCall } from "openai/resources/responses/responses";
import t from "tap";
import { outputsFor, responsesModel, WEATHER_POLICY, weatherAgent } from "./weather-agent.js";
import { MemoryResponseStore } from "../../engine-pod/src/server/memory-response-store.js";
import { postJson, startTestPod } from "../server/helpers.js";
import { ConformanceRecorder } from "../helpers/openai-conformance.js";

// Every answer the SDK gets is checked against OpenAI's published schemas (the last test asserts it).
const conformance = new ConformanceRecorder();

setTracingDisabled(true);

const tools: FunctionTool[] = [
  { type: "function", name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, strict: false },
  { type: "function", name: "get_time", description: "Time in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, strict: false },
];
const policy = WEATHER_POLICY;
type Interlace = { interlace: { continued: boolean; prefilled_tokens: number } };

t.test("openai SDK: a tool loop through previous_response_id never re-prefills its history", async (t) => {
  const { base, pod } = await startTestPod(t, ["--sequences", "2"]);
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0, fetch: conformance.fetch });
  const prefilled = (): number => pod.engine.stats().tokensPrefilled;

  const r1 = await client.responses.create({ model: "interlace", input: "Weather and time in Paris?", tools, max_output_tokens: 200, interlace_policy: policy } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  t.equal(r1.status, "completed");
  const calls = r1.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");
  t.same(calls.map((c) => [c.call_id, c.name, JSON.parse(c.arguments)]), [
    ["call_w", "get_weather", { city: "Paris" }],
    ["call_t", "get_time", { city: "Paris" }],
  ]);
  t.ok(r1.usage !== undefined && r1.usage.input_tokens > 100, "usage");

  // Unrelated traffic between the turns: it shares the chat template's first tokens, and the prefix cache alone would hand it this slot.
  for (const text of ["Tell me a story.", "What is two plus two?"]) {
    const other = await client.chat.completions.create({ model: "interlace", messages: [{ role: "user", content: text }], max_tokens: 4 });
    t.ok(other.choices.length === 1);
  }

  const before = prefilled();
  const r2 = await client.responses.create({ model: "interlace", previous_response_id: r1.id, input: outputsFor(calls), tools, max_output_tokens: 200, interlace_policy: policy } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  const delta = prefilled() - before;
  const x2 = r2 as unknown as Interlace;
  t.equal(r2.status, "completed");
  t.match(r2.output_text, /sunny at noon/);
  t.equal(r2.previous_response_id, r1.id);
  t.equal(x2.interlace.continued, true, "the retained sequence was continued");
  t.equal(delta, x2.interlace.prefilled_tokens, "the engine's prefill counter moved by what the response reports");
  t.ok(delta > 0 && delta * 4 < r1.usage!.input_tokens, `only the two tool outputs were prefilled (${delta} tokens; the first prompt alone is ${r1.usage!.input_tokens})`);
  t.ok(r2.usage!.input_tokens_details.cached_tokens >= r1.usage!.input_tokens + r1.usage!.output_tokens - 1, "the whole first turn came from the resident cells");

  // A user turn after the answer: the template's turn change is appended, the history still resident.
  const before3 = prefilled();
  const r3 = await client.responses.create({ model: "interlace", previous_response_id: r2.id, input: "And tomorrow?", tools, max_output_tokens: 8 } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  const delta3 = prefilled() - before3;
  t.equal((r3 as unknown as Interlace).interlace.continued, true);
  t.ok(delta3 > 0 && delta3 * 4 < r2.usage!.input_tokens, `a new user turn prefilled only itself and the template's turn change (${delta3} tokens of ${r3.usage!.input_tokens})`);

  const fetched = await client.responses.retrieve(r2.id);
  t.equal(fetched.id, r2.id, "GET /v1/responses/{id}");

  await t.test("an unknown previous_response_id is a 404 in OpenAI's error shape", async (t) => {
    const err = await client.responses.create({ model: "interlace", previous_response_id: "resp_nope", input: "hi" }).catch((e: unknown) => e);
    t.ok(err instanceof OpenAI.NotFoundError, "the SDK's NotFoundError");
    t.match((err as Error).message, /resp_nope is unknown or expired/);
  });

  await t.test("bad input: 400 and 413 with {error: {code, message, type}}", async (t) => {
    const cases: [unknown, number, RegExp][] = [
      [{ model: "m" }, 400, /"input"/],
      [{ input: [{ type: "item_reference", id: "x" }] }, 400, /item_reference/],
      [{ input: "hi", tools: [{ type: "web_search" }] }, 400, /only \{"type": "function"/],
      [{ input: "hi", tool_choice: "required" }, 400, /tool_choice/],
      [{ input: [{ type: "function_call_output", call_id: "bad id", output: "x" }] }, 400, /call_id/],
      [{ input: "hi", conversation: "conv_1" }, 400, /previous_response_id/],
      [{ input: "x".repeat(300_000) }, 413, /--max-prompt-bytes/],
      ["{not json", 400, /not valid JSON/],
    ];
    for (const [body, status, message] of cases) {
      const res = await postJson(`${base}/v1/responses`, body);
      const payload = (await res.json()) as { error: { code: string; message: string; type: string } };
      t.equal(res.status, status, JSON.stringify(body).slice(0, 80));
      t.match(payload.error, { code: String, message, type: "invalid_request_error" });
      conformance.check("ErrorResponse", `POST /v1/responses ${JSON.stringify(body).slice(0, 40)}`, payload);
    }
  });

  await t.test("streaming: the Responses events, and the SDK's stream helper assembles the same response", async (t) => {
    const stream = await client.responses.create({ model: "interlace", input: "Weather and time in Paris?", tools, stream: true, max_output_tokens: 200, interlace_policy: policy } as OpenAI.Responses.ResponseCreateParamsStreaming);
    const types: string[] = [];
    const sequence: number[] = [];
    let done: OpenAI.Responses.Response | undefined;
    const deltas = new Map<string, string[]>();
    const argumentsDone = new Map<string, string>();
    for await (const event of stream) {
      types.push(event.type);
      sequence.push(event.sequence_number);
      if (event.type === "response.function_call_arguments.delta") deltas.set(event.item_id, [...(deltas.get(event.item_id) ?? []), event.delta]);
      if (event.type === "response.function_call_arguments.done") argumentsDone.set(event.item_id, event.arguments);
      if (event.type === "response.completed") done = event.response;
    }
    for (const [item, parts] of deltas) {
      t.ok(parts.length > 1, `${item}: the arguments streamed as the model wrote them (${parts.length} deltas)`);
      t.equal(parts.join(""), argumentsDone.get(item), `${item}: the deltas add up to the arguments`);
      const call = done?.output.find((o) => o.type === "function_call" && o.id === item);
      t.equal(call?.type === "function_call" ? call.arguments : undefined, argumentsDone.get(item), `${item}: as in the final response`);
    }
    t.equal(deltas.size, 2);
    t.equal(types[0], "response.created");
    t.equal(types.at(-1), "response.completed");
    t.same(sequence, sequence.map((_, i) => i), "sequence_number counts every event");
    t.ok(types.includes("response.function_call_arguments.done"));
    const streamed = done!.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");
    t.same(streamed.map((c) => c.call_id), ["call_w", "call_t"]);

    const before = prefilled();
    const helper = client.responses.stream({ model: "interlace", previous_response_id: done!.id, input: outputsFor(streamed), tools, max_output_tokens: 200, interlace_policy: policy } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
    let text = "";
    helper.on("response.output_text.delta", (e) => (text += e.delta));
    const final = await helper.finalResponse();
    // The helper adds no `output_text` unless it parses a format: read the message item.
    const finalText = final.output.flatMap((o) => (o.type === "message" ? o.content.map((c) => (c.type === "output_text" ? c.text : "")) : [])).join("");
    t.match(finalText, /sunny at noon/);
    t.equal(text, finalText, "the deltas add up to the final text");
    t.equal((final as unknown as Interlace).interlace.continued, true);
    t.ok((prefilled() - before) * 4 < done!.usage!.input_tokens, "streamed follow-up: only the new items prefilled");
  });
});

t.test("retention off (--response-retention-ms 0): the follow-up re-prefills its history", async (t) => {
  const { base, pod } = await startTestPod(t, ["--sequences", "2", "--response-retention-ms", "0"]);
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0, fetch: conformance.fetch });
  const r1 = await client.responses.create({ model: "interlace", input: "Weather and time in Paris?", tools, max_output_tokens: 200, interlace_policy: policy } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  await client.chat.completions.create({ model: "interlace", messages: [{ role: "user", content: "Tell me a story." }], max_tokens: 4 });
  const calls = r1.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");
  const before = pod.engine.stats().tokensPrefilled;
  const r2 = await client.responses.create({ model: "interlace", previous_response_id: r1.id, input: outputsFor(calls), tools, max_output_tokens: 200, interlace_policy: policy } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  const delta = pod.engine.stats().tokensPrefilled - before;
  t.match(r2.output_text, /sunny at noon/, "the stored conversation still answers");
  t.equal((r2 as unknown as Interlace).interlace.continued, false);
  t.ok(delta > r1.usage!.input_tokens / 2, `the history was prefilled again (${delta} tokens; first prompt ${r1.usage!.input_tokens})`);
});

t.test("OpenAI Agents SDK with its default Responses model: stateless, then chained by previousResponseId", async (t) => {
  const { base } = await startTestPod(t, ["--sequences", "2"]);
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0, fetch: conformance.fetch });
  const ran: string[] = [];
  const agent = weatherAgent(responsesModel(client), ran, "Answer with the tools.");
  const first = await run(agent, "Weather and time in Paris?");
  t.match(first.finalOutput, /sunny at noon/);
  t.same(ran.sort(), ["get_time", "get_weather"]);
  t.ok(first.lastResponseId?.startsWith("resp_"));

  ran.length = 0;
  const second = await run(agent, "Weather and time in Paris?", { stream: true, previousResponseId: first.lastResponseId! });
  let text = "";
  for await (const chunk of second.toTextStream()) text += chunk;
  await second.completed;
  t.match(second.finalOutput, /sunny at noon/);
  t.match(text, /sunny at noon/);
  t.same(ran.sort(), ["get_time", "get_weather"]);
  // Streamed model responses carry no provider data in the run result: read each stored response back.
  const continued: unknown[] = [];
  for (const r of second.rawResponses) continued.push(((await client.responses.retrieve(r.responseId!)) as unknown as Interlace).interlace.continued);
  t.ok(continued.length >= 2, "a tool turn and the answer");
  t.same(continued, continued.map(() => true), `every chained turn continued a resident sequence: ${JSON.stringify(continued)}`);
});

t.test("the in-memory response store: TTL and cap", async (t) => {
  let now = 0;
  const store = new MemoryResponseStore({ ttlMs: 100, maxEntries: 2 }, () => now);
  const entry = (id: string) => ({ id, conversation: [], toolsKey: "[]", response: { id }, inputItems: [] });
  await store.put(entry("a"));
  await store.put(entry("b"));
  await store.put(entry("c"));
  t.equal(await store.get("a"), undefined, "over the cap: the oldest is dropped");
  t.equal((await store.get("b"))?.id, "b");
  now = 101;
  t.equal(await store.get("c"), undefined, "past the TTL");
  t.equal(store.size, 1);
  now = 0;
  await store.put(entry("d"));
  t.ok(await store.delete("d"));
  t.equal(await store.get("d"), undefined, "deleted");
  t.notOk(await store.delete("d"), "a second delete finds nothing");
});

t.test("openai SDK: input_items, delete and cancel", async (t) => {
  const { base } = await startTestPod(t, ["--sequences", "2"]);
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0, fetch: conformance.fetch });
  const r1 = await client.responses.create({ model: "interlace", input: "Weather and time in Paris?", tools, max_output_tokens: 200, interlace_policy: policy } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  const first = await client.responses.inputItems.list(r1.id);
  t.same(first.data.map((i) => (i.type === "message" ? [i.type, i.role, i.content] : [i.type])), [["message", "user", [{ type: "input_text", text: "Weather and time in Paris?" }]]]);
  const calls = r1.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");
  const outputs = outputsFor(calls);
  const r2 = await client.responses.create({ model: "interlace", previous_response_id: r1.id, input: outputs, tools, max_output_tokens: 200, interlace_policy: policy } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  const items = await client.responses.inputItems.list(r2.id, { order: "asc" });
  t.same(items.data.map((i) => (i.type === "function_call_output" ? i.call_id : i.type)), outputs.map((o) => (o as { call_id: string }).call_id), "a follow-up lists its own input items, in order");
  t.ok(items.data.every((i) => typeof i.id === "string" && i.id.startsWith("fco_")), "each with an id");
  const newest = await client.responses.inputItems.list(r2.id, { limit: 1 });
  t.equal(newest.data[0]?.id, items.data.at(-1)?.id, "desc (the default) starts at the newest");
  const paged = await client.responses.inputItems.list(r2.id, { order: "asc", limit: 1, after: items.data[0]!.id });
  t.equal(paged.data[0]?.id, items.data[1]?.id, "after an id");

  await client.responses.delete(r1.id);
  const gone = await client.responses.retrieve(r1.id).catch((e: unknown) => e);
  t.ok(gone instanceof OpenAI.NotFoundError, "a deleted response is gone");
  const again = await client.responses.delete(r1.id).catch((e: unknown) => e);
  t.ok(again instanceof OpenAI.NotFoundError, "and deleting it again is a 404");

  const finished = await client.responses.cancel(r2.id).catch((e: unknown) => e);
  t.ok(finished instanceof OpenAI.BadRequestError, "a finished response cannot be cancelled");
  const pieces = Array.from({ length: 400 }, (_, i) => ` word ${i}`);
  const stream = await client.responses.create({ model: "interlace", input: "Talk for a while.", max_output_tokens: 1500, stream: true, interlace_policy: { type: "text", pieces } } as OpenAI.Responses.ResponseCreateParamsStreaming);
  const types: string[] = [];
  let id: string | undefined;
  let cancelled: OpenAI.Responses.Response | undefined;
  let last: OpenAI.Responses.Response | undefined;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "response.created") id = event.response.id;
    // Cancelled from another request while the text streams.
    if (event.type === "response.output_text.delta" && cancelled === undefined) cancelled = await client.responses.cancel(id!);
    if (event.type === "response.failed") last = event.response;
  }
  t.equal(cancelled?.status, "cancelled", "cancel answers with the cancelled response");
  t.equal(last?.status, "cancelled", "and the stream ends with it");
  t.ok(types.filter((x) => x === "response.output_text.delta").length < pieces.length, "generation stopped early");
});

t.test("every answer conformed to OpenAI's published schemas", async (t) => conformance.assertConforms(t));
