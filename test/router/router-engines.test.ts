/**
 * The router against a real nats-server, two real engine processes on the
 * `test` model (heartbeats into `interlace-engines`) and two router replicas:
 * placement follows the resident prefix; the load bound spills; sessions'
 * events and interrupts reach their own engine through either replica;
 * a request that finds every engine busy waits in the router's capacity
 * queue and is placed in arrival order as sequences free, or gets 429 with
 * `Retry-After` once its wait runs out;
 * interrupt settings are enforced; a client's tool outputs (cache-tool-output)
 * reach the owning engine; a client disconnect frees the engine's
 * sequence; bad input gets clear errors; an engine killed with SIGKILL drops
 * out within the TTL and its sessions end at the client with a reason.
 */
import t from "tap";
import { prefixHashChain, type SessionEvent } from "../../common/src/index.js";
import { appConfig, longSession, openSession, postJson, QUICK, startStack, streamEvents } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";
import { compileSchema } from "../../common/src/wire/validator.js";

t.setTimeout(240_000);

// `pin`: an engine whose sequences are all held stays full while its sessions wait on tools, so "every engine busy" below queues (under the default `eta` a paused session would give its sequence up).
// A short cold-start hold: the app on a pool with no engine below gets its 503 soon (cold-start.test.ts covers the hold).
// A capacity queue wait long enough for a few heartbeats (1 s apart), short enough for the test to see it run out.
const QUEUE_MS = 6_000;
const stack = await startStack(t, { engines: 2, routers: 2, engineArgs: ["--kv-retention", "pin"], router: { coldStartHoldMs: 200, queueMs: QUEUE_MS } });
const [r0, r1] = [stack.url(0), stack.url(1)];
const alpha = appConfig("alpha");
const beta = appConfig("beta", { interrupts: { userInterrupts: false, maxQueued: 4 } });
await stack.putApp(alpha);
await stack.putApp(beta);

/** The system-prompt + tools hash of an app (what engines advertise once they hold it). */
function appPrefix(app: typeof alpha): string {
  return prefixHashChain({ messages: [{ role: "system", content: app.systemPrompt }], tools: app.tools })[1]!;
}

async function heldBy(prefix: string): Promise<string[]> {
  return stack.routers[0]!.engines
    .loads("default", "pool")
    .filter((e) => e.blocks.leading([prefix]).matched === 1)
    .map((e) => e.pod);
}

async function idle(): Promise<boolean> {
  return stack.routers.every((r) => r.engines.loads("default", "pool").every((e) => e.load === 0 && e.free === e.capacity));
}

t.test("placement follows the resident prefix, through either replica", async (t) => {
  const first = await openSession(r0, "alpha", QUICK);
  const events = await streamEvents(r0, "alpha", first.id);
  t.equal(events.at(-1)?.type, "done");
  t.ok(await eventually(async () => (await heldBy(appPrefix(alpha))).includes(first.engine), 5_000), "the engine advertises alpha's prefix");
  t.ok(await eventually(idle, 5_000));
  for (const base of [r1, r0, r1]) {
    const next = await openSession(base, "alpha", { ...QUICK, prompt: `Another question via ${base}` });
    t.equal(next.engine, first.engine, "placed where the prefix is resident");
    t.equal(next.placement.reason, "prefix");
    t.ok(next.placement.matchedSegments >= 2, "system prompt and tool block matched");
    const ev = await streamEvents(base === r0 ? r1 : r0, "alpha", next.id);
    t.equal(ev.at(-1)?.type, "done", "events streamed through the other replica");
    await eventually(idle, 5_000);
  }
  const metrics = await (await fetch(`${r1}/metrics`)).text();
  t.match(metrics, /interlace_router_placements_total\{policy="prefix-affinity",reason="prefix"\} [1-9]/);
});

t.test("the load bound spills sessions of a hot prefix onto the other engine", async (t) => {
  const holders = await heldBy(appPrefix(alpha));
  t.equal(holders.length, 1, `one engine holds alpha's prefix (${holders.join(",")})`);
  const holder = holders[0]!;
  const a = await openSession(r0, "alpha", longSession());
  t.equal(a.engine, holder);
  // With 1 session on the holder and 0 elsewhere, the bound ceil(1.25 * 2 / 2) = 2 still admits it.
  const b = await openSession(r1, "alpha", longSession());
  t.equal(b.engine, holder, "still under the bound");
  t.ok(await eventually(() => stack.routers[0]!.engines.loads("default", "pool").find((e) => e.pod === holder)?.load === 2, 5_000), "the heartbeat shows both");
  const c = await openSession(r0, "alpha", longSession());
  t.not(c.engine, holder, "over the bound: spilled");
  t.equal(c.placement.reason, "prefix-spill");
  t.equal(c.placement.retries, 0, "chosen by the bound, not by a refusal");
  for (const s of [a, b, c]) {
    const res = await fetch(`${r1}/v1/apps/default/alpha/sessions/${s.id}`, { method: "DELETE" });
    t.equal(res.status, 200, "DELETE through the other replica reaches the owning engine");
  }
  t.ok(await eventually(idle, 5_000), "every sequence free again");
});

t.test("interrupts reach the owning engine from any replica; settings enforced", async (t) => {
  // The scripted call `after` is only ready once the user interrupt `u1` is injected.
  const body = {
    prompt: "Wait for my go.",
    policy: {
      type: "lpt-dag",
      calls: [{ id: "after", tool: "sleep", arguments: { ms: 1 }, dependsOn: [], estimatedLatencyMs: 1, afterInterrupt: "u1" }],
      finalText: "ok",
    },
  };
  // Three from one replica: the third is over the bound on the prefix holder, so both engines hold sessions.
  const sessions = [];
  for (let i = 0; i < 3; i++) sessions.push(await openSession(r0, "alpha", body));
  t.equal(new Set(sessions.map((s) => s.engine)).size, 2, "sessions on both engines");
  const streams = sessions.map((s, i) => streamEvents(i % 2 === 0 ? r1 : r0, "alpha", s.id));
  for (const [i, s] of sessions.entries()) {
    const res = await postJson(`${i % 2 === 0 ? r0 : r1}/v1/apps/default/alpha/sessions/${s.id}/interrupts`, { value: "go", id: "u1" });
    t.equal(res.status, 202, await res.clone().text());
    t.equal(((await res.json()) as { engine: string }).engine, s.engine);
  }
  for (const events of await Promise.all(streams)) {
    t.ok(events.some((e) => e.type === "interrupt" && e.kind === "user" && e.id === "u1"), "the user interrupt was injected");
    t.equal(events.at(-1)?.type, "done");
  }
  // beta says userInterrupts: false.
  const s = await openSession(r0, "beta", longSession());
  const forbidden = await postJson(`${r1}/v1/apps/default/beta/sessions/${s.id}/interrupts`, { value: "stop" });
  t.equal(forbidden.status, 403);
  t.match(((await forbidden.json()) as { error: { message: string } }).error.message, /userInterrupts: false/);
  const agent = await postJson(`${r1}/v1/apps/default/beta/sessions/${s.id}/interrupts`, { value: "from another agent", kind: "agent" });
  t.equal(agent.status, 202, "agent messages still go through");
  await fetch(`${r0}/v1/apps/default/beta/sessions/${s.id}`, { method: "DELETE" });
  t.ok(await eventually(idle, 5_000));
});

t.test("cache-tool-output reaches the engine that owns the session, from any replica", async (t) => {
  const s = await openSession(r0, "alpha", longSession());
  const entries = [{ name: "sleep", params: { ms: 5 }, output: "cached" }];
  for (const [base, path] of [
    [r1, `/v1/apps/default/alpha/sessions/${s.id}/cache-tool-output`],
    [r0, `/v1/apps/default/alpha/cache-tool-output/${s.id}`],
  ] as const) {
    const res = await postJson(`${base}${path}`, entries);
    t.equal(res.status, 200, await res.clone().text());
    t.match(await res.json(), { cached: 1, sessionId: s.id, engine: s.engine }, path);
  }
  const bad = await postJson(`${r1}/v1/apps/default/alpha/sessions/${s.id}/cache-tool-output`, [{ output: "no name" }]);
  t.equal(bad.status, 400, "the engine's validation reaches the client");
  t.equal((await postJson(`${r0}/v1/apps/default/alpha/cache-tool-output/nope`, entries)).status, 404);
  await fetch(`${r0}/v1/apps/default/alpha/sessions/${s.id}`, { method: "DELETE" });
  t.ok(await eventually(idle, 5_000));
});

t.test("a client disconnect frees the engine's sequence", async (t) => {
  const s = await openSession(r0, "alpha", longSession());
  const ac = new AbortController();
  const seen: SessionEvent[] = [];
  const stream = streamEvents(r1, "alpha", s.id, ac.signal, (e) => seen.push(e)).catch(() => undefined);
  t.ok(await eventually(() => seen.some((e) => e.type === "call"), 10_000), "the session is running");
  t.notOk(await idle(), "its sequence is busy");
  ac.abort();
  await stream;
  t.ok(await eventually(idle, 5_000), "the engine cancelled the session and freed the sequence");
  const gone = await fetch(`${r0}/v1/apps/default/alpha/sessions/${s.id}/events`);
  t.equal(gone.status, 200, "the finished session still replays");
  const replay = await gone.text();
  t.match(replay, /"reason":"cancelled"/);
});

t.test("bad input: unknown app, bad body, oversized, unknown session, no engine", async (t) => {
  const unknown = await postJson(`${r0}/v1/apps/default/nope/sessions`, QUICK);
  t.equal(unknown.status, 404);
  t.match(await unknown.text(), /default\/nope/);
  const noPrompt = await postJson(`${r0}/v1/apps/default/alpha/sessions`, { policy: QUICK.policy });
  t.equal(noPrompt.status, 400);
  t.match(((await noPrompt.json()) as { error: { message: string } }).error.message, /"prompt" is required/);
  const system = await postJson(`${r0}/v1/apps/default/alpha/sessions`, { ...QUICK, system: "override" });
  t.equal(system.status, 400);
  t.match(await system.text(), /system/);
  const big = await postJson(`${r0}/v1/apps/default/alpha/sessions`, { prompt: "x".repeat(70_000) });
  t.equal(big.status, 413);
  const badJson = await fetch(`${r0}/v1/apps/default/alpha/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
  t.equal(badJson.status, 400);
  const tooMany = await postJson(`${r0}/v1/apps/default/alpha/sessions`, { ...QUICK, maxTokens: 100_000 });
  t.equal(tooMany.status, 400);
  t.match(await tooMany.text(), /maxTokens/);
  const noSession = await fetch(`${r0}/v1/apps/default/alpha/sessions/garbage/events`);
  t.equal(noSession.status, 404);
  const lostEngine = await fetch(`${r0}/v1/apps/default/alpha/sessions/engine-zz.abc/events`);
  t.equal(lostEngine.status, 410);
  await stack.putApp(appConfig("orphan", { enginePool: { name: "empty" } }));
  const orphan = await postJson(`${r1}/v1/apps/default/orphan/sessions`, QUICK);
  t.equal(orphan.status, 503);
  t.match(await orphan.text(), /no ready engine/);
  t.ok(orphan.headers.get("retry-after"));
});

t.test("every engine busy: requests wait in the router's queue, are placed in arrival order as sequences free, and get 429 with Retry-After once the wait runs out", async (t) => {
  const held = [];
  for (let i = 0; i < 4; i++) held.push(await openSession(i % 2 === 0 ? r0 : r1, "alpha", longSession()));
  const engines = new Set(held.map((s) => s.engine));
  t.equal(engines.size, 2, "both engines filled");
  const end = (id: string): Promise<Response> => fetch(`${r0}/v1/apps/default/alpha/sessions/${id}`, { method: "DELETE" });

  const started = Date.now();
  const refused = await postJson(`${r0}/v1/apps/default/alpha/sessions`, QUICK);
  t.equal(refused.status, 429);
  t.equal(refused.headers.get("retry-after"), "1");
  t.match(await refused.text(), /stayed full/, "the reason says the pool stayed full");
  t.ok(Date.now() - started >= QUEUE_MS / 2, `it waited in the queue first (${Date.now() - started} ms), never a hang`);

  const order: string[] = [];
  const post = (name: string): Promise<Response> =>
    postJson(`${r0}/v1/apps/default/alpha/sessions`, { ...QUICK, prompt: `Queued ${name}.` }).then((res) => (order.push(name), res));
  const a = post("a");
  t.ok(await eventually(async () => /interlace_router_capacity_queued_requests\{pool="default\/pool"\} 1/.test(await (await fetch(`${r0}/metrics`)).text()), 3_000), "a waits in the queue");
  const b = post("b");
  t.ok(await eventually(async () => /interlace_router_capacity_queued_requests\{pool="default\/pool"\} 2/.test(await (await fetch(`${r0}/metrics`)).text()), 3_000), "b waits behind it");
  t.same(order, [], "neither is answered while every engine is full");
  await end(held[0]!.id);
  const first = await a;
  t.equal(first.status, 201, "a freed sequence places the older request");
  t.equal(order[0], "a");
  await end(held[1]!.id);
  const second = await b;
  t.equal(second.status, 201, "the next one places the younger");
  t.same(order, ["a", "b"], "in arrival order");
  for (const s of held.slice(2)) await end(s.id);
  for (const res of [first, second]) await streamEvents(r0, "alpha", ((await res.json()) as { id: string }).id);
  t.ok(await eventually(idle, 5_000));
  const metrics = await (await fetch(`${r0}/metrics`)).text();
  t.match(metrics, /interlace_router_capacity_queue_seconds_count\{outcome="placed"\} 2/);
  t.match(metrics, /interlace_router_capacity_queue_refusals_total\{reason="timeout"\} 1/);
});

t.test("chat completions through the router, streaming and not, with the app merged in", async (t) => {
  const res = await postJson(`${r0}/v1/apps/default/alpha/chat/completions`, {
    messages: [{ role: "user", content: "hello" }],
    max_tokens: 4,
  });
  t.equal(res.status, 200, await res.clone().text());
  const body = (await res.json()) as { choices: { message: { content: string } }[]; usage: { prompt_tokens: number } };
  t.ok(body.usage.prompt_tokens > 50, "the app's system prompt and tools were prepended");
  t.ok(res.headers.get("x-interlace-engine"));
  const streamed = await postJson(`${r1}/v1/apps/default/alpha/chat/completions`, { messages: [{ role: "user", content: "hello" }], max_tokens: 4, stream: true });
  t.equal(streamed.status, 200);
  t.match(await streamed.text(), /data: \[DONE\]/);
  const bad = await postJson(`${r1}/v1/apps/default/alpha/chat/completions`, { messages: [{ role: "system", content: "x" }] });
  t.equal(bad.status, 400);
});

t.test("an engine killed with SIGKILL drops out within the TTL; its sessions end with a reason", async (t) => {
  const s = await openSession(r0, "alpha", longSession());
  const victim = stack.engines.get(s.engine)!;
  const seen: SessionEvent[] = [];
  const stream = streamEvents(r1, "alpha", s.id, undefined, (e) => seen.push(e));
  t.ok(await eventually(() => seen.some((e) => e.type === "call"), 10_000));
  const killedAt = Date.now();
  victim.child.kill("SIGKILL");
  // Placed before the routers notice: a refused connection moves on to the next engine.
  const racing = await openSession(r1, "alpha", QUICK);
  t.not(racing.engine, s.engine, `placed on the live engine (retries: ${racing.placement.retries})`);
  await streamEvents(r1, "alpha", racing.id);
  const events = await stream;
  const last = events.at(-1) as { type: string; code?: string; message?: string };
  t.equal(last.type, "error", "the stream ends with an error event");
  t.equal(last.code, "engine_lost");
  t.match(last.message, new RegExp(s.engine));
  t.ok(await eventually(() => stack.routers.every((r) => r.engines.loads("default", "pool").every((e) => e.pod !== s.engine)), 10_000), "gone from placement");
  // TTL 3 s, swept every TTL/4; the slack is for a loaded machine.
  t.ok(Date.now() - killedAt <= 3000 + 3000, `within the TTL (${Date.now() - killedAt} ms after the kill)`);
  const after = await openSession(r0, "alpha", QUICK);
  t.not(after.engine, s.engine, "new sessions go to the live engine");
  await streamEvents(r0, "alpha", after.id);
  const late = await fetch(`${r1}/v1/apps/default/alpha/sessions/${s.id}/events`);
  t.equal(late.status, 410, "the lost session answers 410 engine_lost");
});

t.test("a session's responseFormat passes through the router: the answer is JSON of the schema, in the app's async and sync modes", async (t) => {
  const plan = {
    type: "object",
    properties: { title: { type: "string" }, steps: { type: "array", maxItems: 2, items: { type: "object", properties: { n: { type: "integer" }, done: { type: "boolean" } }, required: ["n", "done"] } } },
    required: ["title", "steps"],
  };
  const validate = compileSchema<unknown>(plan, "answer");
  for (const mode of ["async", "sync"] as const) {
    const app = `fmt-${mode}`;
    await stack.putApp(appConfig(app, { callingMode: mode }));
    t.ok(await eventually(() => stack.routers[0]!.apps.get("default", app) !== undefined, 5_000));
    const s = await openSession(r0, app, { prompt: "a plan", temperature: 1, seed: 2, responseFormat: { type: "json_schema", json_schema: { name: "plan", schema: plan } } });
    const done = (await streamEvents(r1, app, s.id)).find((e): e is Extract<SessionEvent, { type: "done" }> => e.type === "done");
    t.equal(done?.reason, "eos", `${mode}: ended by EOS`);
    const checked = validate(JSON.parse(done?.answer ?? "null"));
    t.ok(checked.ok, checked.ok ? `${mode}: validates: ${done?.answer}` : `${mode}: ${checked.error}: ${JSON.stringify(done?.answer)}`);
  }
  const bad = await postJson(`${r0}/v1/apps/default/alpha/sessions`, { prompt: "x", responseFormat: { type: "xml" } });
  t.equal(bad.status, 400, "a malformed format is the router's 400, naming the field");
  t.match(await bad.text(), /responseFormat\.type/);
  await eventually(idle, 5_000);
});
