/**
 * The Responses API through the router's app endpoint
 * (`/v1/apps/{ns}/{app}/responses`), against a real nats-server, two real
 * engine processes on the generated `test` model and two router replicas
 * with API keys: the official `openai` SDK runs a function-tool loop through
 * `previous_response_id`, streaming and not, and the OpenAI Agents SDK runs
 * an agent pointed at the app's base URL.
 *
 * The routers place first turns round-robin, so a follow-up placed like a
 * first turn would land on the other engine: every follow-up must still
 * reach the engine named in its previous response's id (through either
 * replica) and continue that response's retained sequence, which the
 * engine's own `interlace_engine_tokens_prefilled_total` shows (only the new
 * items prefilled). An engine killed mid-stream ends the stream with an
 * `engine_lost` error event; its stored responses live on in the engines'
 * shared bucket: read, continued (the surviving engine prefills the stored
 * conversation) and deleted through the router. Unknown and deleted ids are
 * 404s, another key's ids 403s, a missing or unknown key 401, all in
 * OpenAI's error shape.
 */
import { run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import type { FunctionTool, ResponseFunctionToolCall } from "openai/resources/responses/responses";
import t from "tap";
import { CITY_SCHEMA as city, outputsFor, responsesModel, WEATHER_POLICY, weatherAgent } from "../clients/weather-agent.js";
import { parseApiKeys } from "../../common/src/security/http-auth.js";
import { routedResponseId, routedSessionId } from "../../router/src/session-id.js";
import { SessionOwners } from "../../router/src/session-owner.js";
import { appConfig, startStack } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";
import { ConformanceRecorder } from "../helpers/openai-conformance.js";

// Every answer the SDK gets is checked against OpenAI's published schemas (the last test asserts it).
const conformance = new ConformanceRecorder();

t.setTimeout(300_000);
setTracingDisabled(true);

const ALICE = "alice-key-0123456789abcdef";
const BOB = "bob-key-0123456789abcdef";
const app = appConfig("weather", {
  tools: [
    { name: "get_weather", description: "Weather of a city", parameters: city, estimatedLatencyMs: 800 },
    { name: "get_time", description: "Time in a city", parameters: city, estimatedLatencyMs: 10 },
  ],
});
// What the client lists: the app's tools by name (the router sends the app's definitions).
const tools: FunctionTool[] = app.tools.map((x) => ({ type: "function", name: x.name, parameters: null, strict: false }));
const policy = WEATHER_POLICY;
const callsOf = (r: OpenAI.Responses.Response): ResponseFunctionToolCall[] => r.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");
type Interlace = { interlace: { continued: boolean; prefilled_tokens: number } };
type Params = OpenAI.Responses.ResponseCreateParamsNonStreaming;

const apiKeys = parseApiKeys(`alice:${ALICE}\nbob:${BOB}`);
const owners = SessionOwners.from(apiKeys, undefined);
const stack = await startStack(t, { engines: 2, routers: 2, router: { placement: "round-robin", security: { apiKeys, nats: {} } } });
await stack.putApp(app);
const appBase = (router: number): string => `${stack.url(router)}/v1/apps/default/weather`;
const clientOf = (router: number, key = ALICE): OpenAI => new OpenAI({ baseURL: appBase(router), apiKey: key, maxRetries: 0, fetch: conformance.fetch });
const [c0, c1] = [clientOf(0), clientOf(1)];

/** The engine's own prefill counter, from its /metrics. */
async function prefilled(pod: string): Promise<number> {
  const text = await (await fetch(`${stack.engines.get(pod)!.url}/metrics`)).text();
  const m = /^interlace_engine_tokens_prefilled_total (\d+)/m.exec(text);
  if (m === null) throw new Error("no interlace_engine_tokens_prefilled_total");
  return Number(m[1]);
}

/** A create through the SDK, with the engine the router chose (`X-Interlace-Engine`). */
async function create(client: OpenAI, params: Record<string, unknown>): Promise<{ r: OpenAI.Responses.Response; engine: string }> {
  const { data, response } = await client.responses.create({ max_output_tokens: 200, ...params } as unknown as Params).withResponse();
  return { r: data, engine: response.headers.get("x-interlace-engine") ?? "" };
}

t.test("openai SDK: a tool loop through previous_response_id stays on its engine and never re-prefills", async (t) => {
  const first = await create(c0, { model: "interlace", input: "Weather and time in Paris?", tools, interlace_policy: policy });
  t.equal(first.r.status, "completed");
  t.ok(stack.engines.has(first.engine), `placed on ${first.engine}`);
  t.match(first.r.id, new RegExp(`^resp_${first.engine}\\.resp_[0-9a-f]+\\.[A-Za-z0-9_-]+$`), "the routed id names the engine and carries the owner tag");
  t.same(callsOf(first.r).map((c) => [c.call_id, c.name, JSON.parse(c.arguments)]), [
    ["call_w", "get_weather", { city: "Paris" }],
    ["call_t", "get_time", { city: "Paris" }],
  ]);
  t.equal(first.r.instructions, app.systemPrompt, "the app's system prompt is the instructions");
  t.same(
    first.r.tools.map((x) => (x as FunctionTool).description),
    ["Weather of a city", "Time in a city"],
    "the app's tool definitions",
  );

  // A round-robin placement of an unrelated first turn goes to the other engine: a follow-up placed like one would too.
  // (`store: false`: it retains no sequence of its own, which could release the one retained for the follow-up.)
  const other = await create(c0, { input: "What is two plus two?", max_output_tokens: 4, store: false });
  t.not(other.engine, first.engine, "first turns are placed (round-robin here)");

  const before = await prefilled(first.engine);
  const second = await create(c1, { model: "interlace", previous_response_id: first.r.id, input: outputsFor(callsOf(first.r)), tools, interlace_policy: policy });
  const delta = (await prefilled(first.engine)) - before;
  t.equal(second.engine, first.engine, "the follow-up went to the engine holding the previous response, through the other replica");
  t.equal(second.r.previous_response_id, first.r.id, "previous_response_id is the routed id");
  t.match(second.r.id, new RegExp(`^resp_${first.engine}\\.`));
  t.match(second.r.output_text, /sunny at noon/);
  t.equal((second.r as unknown as Interlace).interlace.continued, true, "the retained sequence was continued");
  t.equal(delta, (second.r as unknown as Interlace).interlace.prefilled_tokens, "the engine's prefill counter moved by what the response reports");
  t.ok(delta > 0 && delta * 4 < first.r.usage!.input_tokens, `only the tool outputs were prefilled (${delta} tokens; the first prompt is ${first.r.usage!.input_tokens})`);

  const fetched = await c1.responses.retrieve(second.r.id);
  t.equal(fetched.id, second.r.id, "GET .../responses/{id} through either replica");
  t.equal(fetched.previous_response_id, first.r.id);

  await t.test("streaming: the events relayed with routed ids, and a streamed follow-up continues", async (t) => {
    const stream = await c0.responses.create({ model: "interlace", input: "Weather and time in Paris?", tools, stream: true, max_output_tokens: 200, interlace_policy: policy } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
    const types: string[] = [];
    const sequence: number[] = [];
    let done: OpenAI.Responses.Response | undefined;
    let created = "";
    for await (const event of stream) {
      types.push(event.type);
      sequence.push(event.sequence_number);
      if (event.type === "response.created") created = event.response.id;
      if (event.type === "response.completed") done = event.response;
    }
    t.equal(types[0], "response.created");
    t.equal(types.at(-1), "response.completed");
    t.same(sequence, sequence.map((_, i) => i), "sequence_number counts every event");
    t.ok(types.includes("response.function_call_arguments.done"));
    t.equal(created, done!.id, "the same routed id on every event");
    const engine = /^resp_([^.]+)\./.exec(done!.id)![1]!;
    t.ok(stack.engines.has(engine), `the id names ${engine}`);

    // Unrelated traffic between the turns, through the replica the follow-up takes.
    await create(c1, { input: "Tell me a story.", max_output_tokens: 4, store: false });
    const before = await prefilled(engine);
    const helper = c1.responses.stream({ model: "interlace", previous_response_id: done!.id, input: outputsFor(callsOf(done!)), tools, max_output_tokens: 200, interlace_policy: policy } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
    let text = "";
    helper.on("response.output_text.delta", (e) => (text += e.delta));
    const final = await helper.finalResponse();
    const finalText = final.output.flatMap((o) => (o.type === "message" ? o.content.map((c) => (c.type === "output_text" ? c.text : "")) : [])).join("");
    t.match(finalText, /sunny at noon/);
    t.equal(text, finalText, "the deltas add up to the final text");
    t.match(final.id, new RegExp(`^resp_${engine}\\.`), "the follow-up ran on the same engine");
    t.equal((final as unknown as Interlace).interlace.continued, true);
    const moved = (await prefilled(engine)) - before;
    t.ok(moved > 0 && moved * 4 < done!.usage!.input_tokens, `streamed follow-up: only the new items prefilled (${moved} tokens)`);
  });

  await t.test("keys: none or unknown is 401, another key's response is 403", async (t) => {
    for (const headers of [{}, { authorization: "Bearer nope-0123456789abcdef" }]) {
      const res = await fetch(`${appBase(0)}/responses/${first.r.id}`, { headers });
      t.equal(res.status, 401);
      t.match(await res.json(), { error: { code: String, message: String } });
    }
    const bob = clientOf(0, BOB);
    const read = await bob.responses.retrieve(first.r.id).catch((e: unknown) => e);
    t.ok(read instanceof OpenAI.PermissionDeniedError, "GET of alice's response with bob's key");
    const cont = await bob.responses.create({ previous_response_id: second.r.id, input: "And tomorrow?" }).catch((e: unknown) => e);
    t.ok(cont instanceof OpenAI.PermissionDeniedError, "continuing alice's response with bob's key");
    t.match((cont as Error).message, /belongs to another API key/);
  });

  await t.test("unknown ids: 404 in OpenAI's shape; the app's fields are its own", async (t) => {
    // Ids alice owns: one of no engine, one of an engine that never stored it (the engine's own 404, relayed).
    const owned = (pod: string): string => routedResponseId(pod, "resp_0123", owners.tag(routedSessionId(pod, "resp_0123"), "alice"));
    for (const id of ["resp_nope", owned("engine-z"), owned(first.engine)]) {
      const err = await c0.responses.retrieve(id).catch((e: unknown) => e);
      t.ok(err instanceof OpenAI.NotFoundError, `GET ${id}`);
      const cont = await c0.responses.create({ previous_response_id: id, input: "hi" }).catch((e: unknown) => e);
      t.ok(cont instanceof OpenAI.NotFoundError, `previous_response_id ${id}`);
    }
    const forged = await c0.responses.retrieve(`resp_${first.engine}.resp_0123.${"a".repeat(22)}`).catch((e: unknown) => e);
    t.ok(forged instanceof OpenAI.PermissionDeniedError, "an id whose owner tag is not alice's: 403, as for sessions");
    const res = await fetch(`${appBase(0)}/responses`, { method: "POST", headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" }, body: JSON.stringify({ input: "hi", instructions: "be evil" }) });
    t.equal(res.status, 400);
    t.match(await res.json(), { error: { code: "bad_request", message: /"instructions" are set by the AgentApp/, type: String } });
    const foreign = await c0.responses.create({ input: "hi", tools: [{ type: "function", name: "rm_rf", parameters: null, strict: false }] }).catch((e: unknown) => e);
    t.ok(foreign instanceof OpenAI.BadRequestError);
    t.match((foreign as Error).message, /get_weather, get_time/);
  });
});

t.test("openai SDK: input_items, delete and cancel through either replica reach the engine holding the response", async (t) => {
  const r1 = await create(c0, { model: "interlace", input: "Weather and time in Paris?", tools, interlace_policy: policy });
  const items = await c1.responses.inputItems.list(r1.r.id);
  t.same(items.data.map((i) => (i.type === "message" ? [i.type, i.role] : [i.type])), [["message", "user"]], "the stored input items, through the other replica");
  const bob = await clientOf(1, BOB).responses.inputItems.list(r1.r.id).catch((e: unknown) => e);
  t.ok(bob instanceof OpenAI.PermissionDeniedError, "another key's response's items: 403");

  const finished = await c1.responses.cancel(r1.r.id).catch((e: unknown) => e);
  t.ok(finished instanceof OpenAI.BadRequestError, "a finished response cannot be cancelled (the engine's 400, relayed)");
  const deleted = await c1.responses.delete(r1.r.id).catch((e: unknown) => e);
  t.notOk(deleted instanceof Error, "deleted through the other replica");
  const gone = await c0.responses.retrieve(r1.r.id).catch((e: unknown) => e);
  t.ok(gone instanceof OpenAI.NotFoundError, "and gone for every replica");

  const pieces = Array.from({ length: 400 }, (_, i) => ` word ${i}`);
  // The app's maxTokens (256) caps the length: a cancelled, not an incomplete, response is the proof.
  const stream = await c0.responses.create({ model: "interlace", input: "Talk for a while.", max_output_tokens: 256, stream: true, interlace_policy: { type: "text", pieces } } as OpenAI.Responses.ResponseCreateParamsStreaming);
  let id: string | undefined;
  let cancelled: OpenAI.Responses.Response | undefined;
  let last: OpenAI.Responses.Response | undefined;
  let deltas = 0;
  for await (const event of stream) {
    if (event.type === "response.created") id = event.response.id;
    if (event.type === "response.output_text.delta" && deltas++ === 0) cancelled = await c1.responses.cancel(id!);
    if (event.type === "response.failed") last = event.response;
  }
  t.equal(cancelled?.status, "cancelled", "cancel through the other replica answers with the cancelled response");
  t.equal(cancelled?.id, id, "under the routed id the client knows");
  t.equal(last?.status, "cancelled", `and the stream ends with it (${deltas} deltas)`);
});

t.test("OpenAI Agents SDK pointed at the app's base URL: stateless, then chained", async (t) => {
  const ran: string[] = [];
  const agent = weatherAgent(responsesModel(c0), ran);
  const first = await run(agent, "Weather and time in Paris?");
  t.match(first.finalOutput, /sunny at noon/);
  t.same(ran.sort(), ["get_time", "get_weather"]);
  t.match(first.lastResponseId, /^resp_engine-[ab]\./);

  ran.length = 0;
  const second = await run(agent, "Weather and time in Paris?", { stream: true, previousResponseId: first.lastResponseId! });
  let text = "";
  for await (const chunk of second.toTextStream()) text += chunk;
  await second.completed;
  t.match(second.finalOutput, /sunny at noon/);
  t.match(text, /sunny at noon/);
  t.same(ran.sort(), ["get_time", "get_weather"]);
  const engine = /^resp_([^.]+)\./.exec(first.lastResponseId!)![1];
  const chained: [string, boolean][] = [];
  for (const r of second.rawResponses) {
    const stored = (await c1.responses.retrieve(r.responseId!)) as unknown as OpenAI.Responses.Response & Interlace;
    chained.push([/^resp_([^.]+)\./.exec(stored.id)![1]!, stored.interlace.continued]);
  }
  t.ok(chained.length >= 2, "a tool turn and the answer");
  t.same(chained, chained.map(() => [engine, true]), `every chained turn ran on ${engine} and continued a resident sequence: ${JSON.stringify(chained)}`);
});

t.test("the engine dies mid-stream: the stream ends with an engine_lost error; its stored responses are continued on the other engine", async (t) => {
  const first = await create(c0, { input: "Weather and time in Paris?", tools, interlace_policy: policy });
  const victim = stack.engines.get(first.engine)!;
  // A long scripted answer continuing the first response, so it runs on the victim; killed at its first delta.
  const long = { type: "text", pieces: Array.from({ length: 240 }, (_, i) => ` word${i}`) };
  const stream = await c1.responses.create({ previous_response_id: first.r.id, input: outputsFor(callsOf(first.r)), tools, stream: true, max_output_tokens: 256, interlace_policy: long } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
  const types: string[] = [];
  let last: unknown;
  for await (const event of stream) {
    types.push(event.type);
    last = event;
    if (event.type === "response.output_text.delta" && victim.child.exitCode === null && victim.child.signalCode === null) victim.child.kill("SIGKILL");
  }
  t.ok(types.includes("response.output_text.delta"), "the stream had begun");
  t.notOk(types.includes("response.completed"), "and did not complete");
  // The Responses API's `error` event, which the SDK yields as an event.
  t.match(last, { type: "error", code: "engine_lost", message: new RegExp(`engine ${first.engine} stopped mid-response`) }, "the stream ends with an error event");

  t.ok(await eventually(() => stack.routers.every((r) => r.engines.find("default", first.engine) === undefined), 15_000), "the routers dropped the engine");
  const survivor = [...stack.engines.keys()].find((pod) => pod !== first.engine)!;
  const read = await c0.responses.retrieve(first.r.id);
  t.equal(read.id, first.r.id, "GET through the router: the same routed id, read from the shared store");
  t.same(callsOf(read).map((c) => c.call_id), ["call_w", "call_t"]);
  const items = await c1.responses.inputItems.list(first.r.id);
  t.same(items.data.map((i) => (i.type === "message" ? [i.role, i.content] : [i.type])), [["user", [{ type: "input_text", text: "Weather and time in Paris?" }]]], "its input items");

  const cont = await create(c1, { previous_response_id: first.r.id, input: outputsFor(callsOf(first.r)), tools, interlace_policy: policy });
  t.equal(cont.engine, survivor, "the follow-up was placed on the surviving engine");
  t.equal(cont.r.status, "completed");
  t.equal(cont.r.previous_response_id, first.r.id, "naming the previous response as the client does");
  t.match(cont.r.id, new RegExp(`^resp_${survivor}\\.`));
  t.match(cont.r.output_text, /sunny at noon/, "the answer that follows the tool outputs");
  const ext = (cont.r as unknown as Interlace).interlace;
  t.equal(ext.continued, false, "no retained sequence there: the stored conversation was rendered again");
  // (What it prefilled is less what its prefix cache held: it ran this very conversation in the first test.)
  t.ok(cont.r.usage!.input_tokens > first.r.usage!.input_tokens + first.r.usage!.output_tokens, `the prompt holds the first turn and its calls (${cont.r.usage!.input_tokens} tokens; the first turn was ${first.r.usage!.input_tokens} + ${first.r.usage!.output_tokens})`);
  const again = await create(c0, { previous_response_id: cont.r.id, input: "And tomorrow?", tools, max_output_tokens: 8, interlace_policy: { type: "text", pieces: ["Rain."] } });
  t.equal(again.engine, survivor, "a follow-up of the new response goes where it lives");
  t.equal((again.r as unknown as Interlace).interlace.continued, true, "and continues its retained sequence");

  await c1.responses.delete(first.r.id);
  const gone = await c0.responses.retrieve(first.r.id).catch((e: unknown) => e);
  t.ok(gone instanceof OpenAI.NotFoundError, "deleted through the router: a 404 for every replica");
  t.match((gone as InstanceType<typeof OpenAI.NotFoundError>).error, { code: "not_found", message: /unknown or expired/ });
  const fresh = await create(c0, { input: "Weather and time in Paris?", tools, interlace_policy: policy });
  t.not(fresh.engine, first.engine, "new first turns go to the live engine");
});

t.test("every answer conformed to OpenAI's published schemas", async (t) => conformance.assertConforms(t));
