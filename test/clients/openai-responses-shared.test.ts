/**
 * Stored responses outlive their engine: a real nats-server and real engine
 * processes on the generated `test` model, each given `--nats-url` (so they
 * share the `interlace-responses` bucket), and the official `openai` SDK as
 * the client of each engine directly.
 *
 * A response created on engine A, with A then SIGKILLed, is read (GET,
 * input_items) and continued through `previous_response_id` on engine B,
 * which prefills the stored conversation (its usage counts the earlier turn)
 * and answers from it; B deletes it, after which every id of it is OpenAI's
 * 404. While NATS is down, a read is a 503 with Retry-After, and after its
 * restart the response is there again. On engines whose `--response-store-ttl-ms` is short, a stored
 * response, readable on either, becomes a 404 on both once that retention
 * has passed; a retention under the minimum is refused, naming the flag.
 */
import OpenAI from "openai";
import type { FunctionTool, ResponseFunctionToolCall } from "openai/resources/responses/responses";
import t, { type Test } from "tap";
import { spawnEngine, type EngineProcess } from "../../hack/engine-process.js";
import { parseEnginePodOptions } from "../../engine-pod/src/config.js";
import { parseArgv } from "../../common/src/config.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { waitFor } from "../helpers/wait.js";
import { CITY_SCHEMA as city, outputsFor, WEATHER_POLICY as policy } from "./weather-agent.js";

t.setTimeout(600_000);

const tools: FunctionTool[] = [
  { type: "function", name: "get_weather", description: "Weather of a city", parameters: city, strict: false },
  { type: "function", name: "get_time", description: "Time in a city", parameters: city, strict: false },
];
type Interlace = { interlace: { continued: boolean; prefilled_tokens: number } };
type Params = OpenAI.Responses.ResponseCreateParamsNonStreaming;
const callsOf = (r: OpenAI.Responses.Response): ResponseFunctionToolCall[] => r.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");

async function engineOn(t: Test, natsUrl: string, pod: string, extra: string[] = []): Promise<{ engine: EngineProcess; client: OpenAI }> {
  const engine = await spawnEngine(["--model-preset", "test", "--sequences", "2", "--context-size", "2048", "--nats-url", natsUrl, "--pod-name", pod, ...extra], { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 120_000 });
  t.teardown(() => engine.stop());
  return { engine, client: new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: "unused", maxRetries: 0 }) };
}

t.test("a response created on engine A is read, continued and deleted on engine B after A is killed", async (t) => {
  const nats = await startNatsServer(t);
  const a = await engineOn(t, nats.url, "engine-a");
  const b = await engineOn(t, nats.url, "engine-b");

  const first = await a.client.responses.create({ model: "interlace", input: "Weather and time in Paris?", tools, max_output_tokens: 200, interlace_policy: policy } as unknown as Params);
  t.equal(first.status, "completed");
  const calls = callsOf(first);
  t.same(calls.map((c) => c.name), ["get_weather", "get_time"], "the first turn called both tools");
  a.engine.child.kill("SIGKILL");
  await new Promise((r) => a.engine.child.once("exit", r));

  const read = await b.client.responses.retrieve(first.id);
  t.equal(read.id, first.id, "GET on B of A's response");
  t.same(callsOf(read).map((c) => c.call_id), calls.map((c) => c.call_id), "with its output");
  const items = await b.client.responses.inputItems.list(first.id);
  t.same(
    items.data.map((i) => (i.type === "message" ? [i.role, i.content] : [i.type])),
    [["user", [{ type: "input_text", text: "Weather and time in Paris?" }]]],
    "input_items on B: A's stored input",
  );

  const second = (await b.client.responses.create({ model: "interlace", previous_response_id: first.id, input: outputsFor(calls), tools, max_output_tokens: 200, interlace_policy: policy } as unknown as Params)) as OpenAI.Responses.Response & Interlace;
  t.equal(second.status, "completed", "continued on B");
  t.equal(second.previous_response_id, first.id);
  t.match(second.output_text, /sunny at noon/, "the scripted answer after the tool outputs");
  t.equal(second.interlace.continued, false, "B retains no sequence of A's: the stored conversation was rendered again");
  const firstPrompt = first.usage!.input_tokens + first.usage!.output_tokens;
  t.ok(second.usage!.input_tokens > firstPrompt, `the prompt holds the earlier turn: ${second.usage!.input_tokens} input tokens, the first turn was ${firstPrompt}`);
  t.ok(second.interlace.prefilled_tokens >= first.usage!.input_tokens, `B prefilled the earlier conversation (${second.interlace.prefilled_tokens} tokens)`);
  const chained = await b.client.responses.inputItems.list(second.id, { order: "asc" });
  t.same(chained.data.map((i) => (i.type === "function_call_output" ? i.call_id : i.type)), calls.map((c) => c.call_id), "the follow-up's own input items");

  const deleted = await b.client.responses.delete(first.id).then(
    () => "deleted",
    (e: unknown) => e,
  );
  t.equal(deleted, "deleted", "DELETE on B of A's response");
  for (const [what, attempt] of [
    ["GET", () => b.client.responses.retrieve(first.id)],
    ["input_items", () => b.client.responses.inputItems.list(first.id)],
    ["DELETE", () => b.client.responses.delete(first.id)],
    ["previous_response_id", () => b.client.responses.create({ model: "interlace", previous_response_id: first.id, input: "hi" })],
  ] as const) {
    const err = await (attempt as () => Promise<unknown>)().catch((e: unknown) => e);
    t.ok(err instanceof OpenAI.NotFoundError, `${what} after the delete: 404`);
    t.match((err as InstanceType<typeof OpenAI.NotFoundError>).error, { code: "not_found", message: /unknown or expired/, type: String }, "in OpenAI's error shape");
  }
  t.equal((await b.client.responses.retrieve(second.id)).id, second.id, "the follow-up itself is still stored");

  // NATS down for a while: the store cannot be read, which is a 503 to retry (the response may be retained), not a 404.
  const restarting = nats.restart(10_000);
  const down = await waitFor("an error while NATS is down", () => b.client.responses.retrieve(second.id).then(() => false, (e: unknown) => e), 10_000);
  t.ok(down instanceof OpenAI.APIError && down.status === 503, `a 503 while the store is unreachable: ${String(down)}`);
  t.match((down as InstanceType<typeof OpenAI.APIError>).headers?.get("retry-after"), /^\d+$/, "with Retry-After");
  await restarting;
  const back = await waitFor("the response after NATS is back", () => b.client.responses.retrieve(second.id).catch(() => undefined), 30_000);
  t.equal(back.id, second.id, "NATS back (file storage): the response is there again");
});

t.test("retention: a stored response is a 404 on every engine once --response-store-ttl-ms has passed", async (t) => {
  t.throws(() => parseEnginePodOptions({ flags: parseArgv(["--model-preset", "test", "--response-store-ttl-ms", "10"]), env: {} }), /response-store-ttl-ms/, "a retention under a second is refused, naming the flag");
  const nats = await startNatsServer(t);
  const ttl = ["--response-store-ttl-ms", "3000"];
  const c = await engineOn(t, nats.url, "engine-c", ttl);
  const d = await engineOn(t, nats.url, "engine-d", ttl);
  const r = await c.client.responses.create({ model: "interlace", input: "Say hi.", max_output_tokens: 8, interlace_policy: { type: "text", pieces: ["Hi."] } } as unknown as Params);
  t.equal((await d.client.responses.retrieve(r.id)).id, r.id, "retrievable on the other engine while retained");
  const expired = await waitFor("the response to expire", () => d.client.responses.retrieve(r.id).then(() => false, (e: unknown) => e), 20_000);
  t.ok(expired instanceof OpenAI.NotFoundError, "past the retention: 404");
  t.match((expired as InstanceType<typeof OpenAI.NotFoundError>).error, { code: "not_found", message: /unknown or expired/ });
  const onC = await c.client.responses.retrieve(r.id).catch((e: unknown) => e);
  t.ok(onC instanceof OpenAI.NotFoundError, "on the engine that generated it too");
  const cont = await c.client.responses.create({ model: "interlace", previous_response_id: r.id, input: "hi" }).catch((e: unknown) => e);
  t.ok(cont instanceof OpenAI.NotFoundError, "and it cannot be continued");
  t.match((cont as Error).message, /responses are kept 3 s/, "the 404 says how long responses are kept");
});
