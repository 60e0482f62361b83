/**
 * Session affinity for chat traffic, on a real nats-server, two real engine
 * processes (four sequences each, the generated `test` model) and two router
 * replicas, through the official `openai` SDK: chat requests that name
 * their conversation (`x-session-id`, or the Codex CLI's `session_id`) stay
 * on one engine turn after turn and through either replica, though the app's
 * shared prefix is resident on one engine only; different conversations
 * spread over both; and a conversation whose engine is over the CHWBL load
 * bound spills, then comes back once the load is gone.
 */
import t from "tap";
import OpenAI from "openai";
import { prefixHashChain } from "../../common/src/index.js";
import { mergeSessionRequest } from "../../router/src/request-merge.js";
import { eventually } from "../helpers/wait.js";
import { appConfig, longSession, POOL, postJson, startStack } from "./fixtures.js";

t.setTimeout(600_000);

const stack = await startStack(t, { engines: 2, routers: 2, engineArgs: ["--sequences", "4"] });
const app = appConfig("chat");
await stack.putApp(app);
const clientOf = (router: number): OpenAI => new OpenAI({ baseURL: `${stack.url(router)}/v1/apps/default/chat`, apiKey: "unused", maxRetries: 0 });
const clients = [clientOf(0), clientOf(1)];

/** One chat turn through router `router`, naming its conversation in `headers`; the engine that served it. */
async function turn(router: number, headers: Record<string, string>, content: string): Promise<string> {
  const { response } = await clients[router]!.chat.completions.create({ model: "chat", messages: [{ role: "user", content }], max_tokens: 2 }, { headers }).withResponse();
  return response.headers.get("x-interlace-engine") ?? "";
}

const loads = (): Map<string, number> => new Map(stack.routers[0]!.engines.loads("default", POOL).map((e) => [e.pod, e.load]));
const prefix = prefixHashChain({ messages: [{ role: "system", content: app.systemPrompt }], tools: app.tools })[1]!;

t.test("the same session header keeps a conversation on one engine; different ones spread", async (t) => {
  // The app's prefix resident on one engine: without a session header, every chat turn follows it there.
  const warm = await turn(0, {}, "warm up");
  t.ok(await eventually(() => stack.routers.every((r) => r.engines.loads("default", POOL).find((e) => e.pod === warm)?.blocks.leading([prefix]).matched === 1), 10_000), "both routers see the prefix on one engine");
  const unkeyed = new Set<string>();
  for (let i = 0; i < 4; i++) unkeyed.add(await turn(i % 2, {}, `unkeyed ${i}`));
  t.same([...unkeyed], [warm], "without a session header, prefix affinity sends every turn to the prefix's engine");

  const engineOf = new Map<string, string>();
  for (let c = 0; c < 8; c++) {
    const seen = new Set<string>();
    // Turns alternate between the replicas, and between the two header names.
    for (let i = 0; i < 3; i++) seen.add(await turn(i % 2, i === 2 ? { session_id: `conv-${c}` } : { "x-session-id": `conv-${c}` }, `conversation ${c}, turn ${i}`));
    t.equal(seen.size, 1, `conv-${c}: every turn on ${[...seen].join(",")}`);
    engineOf.set(`conv-${c}`, [...seen][0]!);
  }
  t.equal(new Set(engineOf.values()).size, 2, `conversations spread over both engines: ${JSON.stringify([...engineOf])}`);
});

t.test("a conversation whose engine is over the load bound spills, and comes back when the load is gone", async (t) => {
  const own = await turn(0, { "x-session-id": "busy-conv" }, "first turn");
  const other = [...stack.engines.keys()].find((p) => p !== own)!;
  // Two long sessions opened on its engine directly (the router's own merge of the app): loads 2 + 0, so the bound
  // for one more is ceil(1.25 * 3 / 2) = 2 and its engine is over it, though it has free sequences.
  const body = mergeSessionRequest(app, longSession()).body;
  const held: string[] = [];
  for (let i = 0; i < 2; i++) {
    const res = await postJson(`${stack.engines.get(own)!.url}/v1/sessions`, body);
    t.equal(res.status, 201, "opened on the engine");
    held.push(((await res.json()) as { id: string }).id);
  }
  t.ok(await eventually(() => loads().get(own) === 2 && loads().get(other) === 0, 10_000), "the routers see the load");
  t.equal(await turn(1, { "x-session-id": "busy-conv" }, "second turn"), other, "spilled to the other engine");
  for (const id of held) await fetch(`${stack.engines.get(own)!.url}/v1/sessions/${id}`, { method: "DELETE" });
  t.ok(await eventually(() => loads().get(own) === 0, 10_000));
  t.equal(await turn(0, { "x-session-id": "busy-conv" }, "third turn"), own, "back on its engine once within the bound");
});

t.test("a session header too long to be an id is refused, naming the header", async (t) => {
  const res = await postJson(`${stack.url(0)}/v1/apps/default/chat/chat/completions`, { messages: [{ role: "user", content: "x" }], max_tokens: 1 });
  t.equal(res.status, 200);
  const long = await fetch(`${stack.url(0)}/v1/apps/default/chat/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-session-id": "x".repeat(300) },
    body: JSON.stringify({ messages: [{ role: "user", content: "x" }], max_tokens: 1 }),
  });
  t.equal(long.status, 400);
  t.match(await long.text(), /x-session-id/);
});
