/**
 * @module Fuzzed messages (fast-check, fixed seed) of every NATS message type
 * a remote party with bus access can write, other than the tool calls,
 * results and interrupts of fuzz-nats.test.ts, into their real consumers on a
 * real nats-server: AgentApp configs (`interlace-apps`), engine heartbeats
 * (`interlace-engines`), KV events (`interlace.kvevents.>`), other router
 * replicas' warm arrivals (`interlace.warmarrivals.>`) and program keys
 * (`interlace-programs`) into a real router; router presence
 * (`interlace-routers`), engine heartbeats and runner heartbeats
 * (`interlace-runners`) into the operator's live state. Each bad message is
 * dropped and counted (`interlace_router_malformed_messages_total`); the
 * router's answers for the app stay 2xx/4xx (or 503 `no_engine` / 502
 * `engine_lost` for an engine that is not there), never a 500, and it still
 * applies the next valid update; the live state's counts stay non-negative
 * integers, never a throw.
 */
import t from "tap";
import fc from "fast-check";
import { connect } from "@nats-io/transport-node";
import { parseJson } from "../../common/src/wire/index.js";
import { validateKvEvent } from "../../common/src/protocol/validate.js";
import { appKey, engineKey, kvEventsSubject, openAppsBucket, openEnginesBucket, openRoutersBucket, openRunnersBucket, runnerKey, withAppDefaults, type AppConfig } from "../../common/src/protocol/index.js";
import { createLogger } from "../../common/src/index.js";
import { startRouter } from "../../router/src/index.js";
import { routerOptions } from "../../router/src/config.js";
import { openProgramsBucket } from "../../router/src/programs/program-bucket.js";
import { warmArrivalsSubject } from "../../common/src/protocol/warm-arrivals.js";
import { NatsLiveState } from "../../operator/src/controllers/live-state.js";
import { hostileValue, paths, setAt } from "../helpers/fuzz-http.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { engineHeartbeat } from "../helpers/engine-heartbeat.js";
import { eventually } from "../helpers/wait.js";

const SEED = Number(process.env["FUZZ_SEED"] ?? 26);
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 60);
t.comment(`fuzz seed ${SEED}, ${RUNS} messages per type (FUZZ_SEED / FUZZ_RUNS to change)`);
const log = createLogger("test", process.env["LOG_LEVEL"] ?? "silent");
const POOL = { namespace: "default", name: "pool" };

const server = await startNatsServer(t);
const router = await startRouter(routerOptions({ natsUrl: server.url, routerId: "fuzz", prefixIndex: "events", coldStartHoldMs: 0, presenceMs: 200, logLevel: "silent" }), log);
t.teardown(() => router.close());
const base = `http://127.0.0.1:${router.port}`;
const nc = await connect({ servers: server.url });
t.teardown(() => nc.close());
const live = new NatsLiveState(server.url, log);
t.teardown(() => live.close());

const app: AppConfig = withAppDefaults({
  namespace: "default",
  name: "fz",
  enginePool: { name: POOL.name },
  systemPrompt: "You are fz.",
  tools: [{ name: "sleep", description: "Waits.", parameters: { type: "object", properties: { ms: { type: "integer" } } } }],
  semanticFunctions: [{ name: "f", template: "Say {{input:x}}: {{output:y}}", outputs: [{ name: "y", maxTokens: 2, temperature: 0 }], tools: false }],
});
// Spread into a plain record: the mutation walker takes any JSON object.
const heartbeat: Record<string, unknown> = { ...engineHeartbeat({ pod: "engine-x", pool: POOL, totalSequences: 2, kvEvents: { epoch: "e1", seq: 0 } }) };

/** A valid value with one value anywhere inside it replaced or removed, a hostile key added, or anything at all. */
function mutations(valid: Record<string, unknown>): fc.Arbitrary<string> {
  const all = paths(valid).filter((p) => p.length > 0);
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...all), hostileValue).map(([p, v]) => JSON.stringify(setAt(valid, p, v))) },
    fc.constantFrom(...all).map((p) => JSON.stringify(setAt(valid, p, undefined))),
    fc.tuple(fc.constantFrom("__proto__", "constructor", "prototype"), hostileValue).map(([k, v]) => `${JSON.stringify(valid).slice(0, -1)},${JSON.stringify(k)}:${JSON.stringify(v) ?? "null"}}`),
    hostileValue.map((v) => JSON.stringify(v) ?? "null"),
    fc.string({ maxLength: 200 }),
  );
}
const sample = <T>(arb: fc.Arbitrary<T>): T[] => fc.sample(arb, { numRuns: RUNS, seed: SEED });
const malformed = async (source: string): Promise<number> => (await router.metrics.malformedMessages.get()).values.find((v) => v.labels["source"] === source)?.value ?? 0;

/** The app's routes answer without a 500 (an engine that is absent or lies about its endpoint is a 503 / 502 naming it). */
async function appAnswers(): Promise<string[]> {
  const problems: string[] = [];
  const requests: [string, string, unknown?][] = [
    ["GET", "/v1/apps/default/fz"],
    ["POST", "/v1/apps/default/fz/sessions", { prompt: "Hi." }],
    ["POST", "/v1/apps/default/fz/chat/completions", { messages: [{ role: "user", content: "Hi." }] }],
    ["POST", "/v1/apps/default/fz/programs", { inputs: { a: "x" }, calls: [{ id: "c", function: "f", inputs: { x: "a" }, outputs: { y: "b" } }] }],
  ];
  for (const [method, path, body] of requests) {
    const res = await fetch(`${base}${path}`, { method, headers: { "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    const code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    if (res.status >= 500 && !(res.status === 503 && code === "no_engine") && !(res.status === 502 && code === "engine_lost")) problems.push(`${method} ${path} → ${res.status} ${text.slice(0, 200)}`);
    if (res.status === 201 && path.endsWith("/programs")) await fetch(`${base}${path}/${(JSON.parse(text) as { id: string }).id}`, { method: "DELETE" });
  }
  return problems;
}

t.test("AgentApp configs: a bad one is dropped and counted; the app's routes never answer 500", async (t) => {
  const apps = await openAppsBucket(nc);
  const key = appKey(app.namespace, app.name);
  await apps.put(key, JSON.stringify(app));
  t.ok(await eventually(() => router.apps.get("default", "fz") !== undefined, 5_000), "the valid config is served");
  const before = await malformed("apps");
  const problems: string[] = [];
  let sentinel = 0;
  for (const value of sample(mutations(app as unknown as Record<string, unknown>))) {
    await apps.put(key, value);
    // Entries apply in order: once the next sentinel is seen, this value has been applied or dropped.
    const s = ++sentinel;
    await apps.put(appKey("default", "sentinel"), JSON.stringify({ ...app, name: "sentinel", systemPrompt: `sentinel ${s}` }));
    if (!(await eventually(() => router.apps.get("default", "sentinel")?.config.systemPrompt === `sentinel ${s}`, 5_000))) throw new Error("the router stopped applying app configs");
    for (const p of await appAnswers()) problems.push(`${p} after ${value.slice(0, 200)}`);
  }
  t.same(problems.slice(0, 5), [], `${RUNS} fuzzed configs: every answer 2xx/4xx (or no_engine), never 500`);
  t.ok((await malformed("apps")) - before > 0, `bad configs counted (${(await malformed("apps")) - before} of ${RUNS})`);
  for (const bad of ["{", "null", "[]", JSON.stringify({ ...app, name: "other" })]) {
    const n = await malformed("apps");
    await apps.put(key, bad);
    t.ok(await eventually(async () => (await malformed("apps")) === n + 1, 5_000), `${bad.slice(0, 20)}: dropped and counted once`);
  }
  await apps.put(key, JSON.stringify(app));
  t.ok(await eventually(() => router.apps.get("default", "fz")?.config.systemPrompt === app.systemPrompt, 5_000), "the next valid config is applied");
});

t.test("engine heartbeats: dropped and counted, placement never answers 500; the operator's counts stay whole numbers", async (t) => {
  const engines = await openEnginesBucket(nc);
  const before = await malformed("engines");
  const problems: string[] = [];
  let sentinel = 0;
  for (const value of sample(mutations(heartbeat))) {
    await engines.put(engineKey(POOL, "engine-x"), value);
    const s = ++sentinel;
    await engines.put(engineKey(POOL, "sentinel"), JSON.stringify({ ...heartbeat, pod: "sentinel", ready: false, at: s }));
    if (!(await eventually(() => router.engines.find("default", "sentinel")?.at === s, 5_000))) throw new Error("the router stopped applying heartbeats");
    for (const p of await appAnswers()) problems.push(`${p} after ${value.slice(0, 200)}`);
    const ready = await live.readyEngines("default", POOL.name);
    const signals = await live.engineSignals("default", POOL.name);
    if (!Number.isInteger(ready) || ready < 0 || !Array.isArray(signals)) problems.push(`live state: ready ${String(ready)} after ${value.slice(0, 200)}`);
  }
  t.same(problems.slice(0, 5), [], `${RUNS} fuzzed heartbeats: no 500, the operator's counts whole`);
  t.ok((await malformed("engines")) - before > 0, `bad heartbeats counted (${(await malformed("engines")) - before} of ${RUNS})`);
  await engines.delete(engineKey(POOL, "sentinel"));
  await engines.delete(engineKey(POOL, "engine-x"));
});

t.test("KV events: each malformed one dropped and counted; the router keeps placing", async (t) => {
  const subject = kvEventsSubject(POOL);
  const event = { pod: "engine-x", epoch: "e1", seq: 1, stored: ["a"], filling: [], removed: [] };
  const values = sample(mutations(event));
  const before = await malformed("kv_events");
  const junk = ["{", "null", "[]", JSON.stringify({ ...event, seq: -1 })];
  for (const v of [...values, ...junk]) nc.publish(subject, v);
  nc.publish("interlace.kvevents.only-one-token", JSON.stringify(event));
  await nc.flush();
  // The schema says which are malformed; each of those (and the one on a subject that names no pool) must be counted once.
  const bad = [...values, ...junk].filter((v) => !validateKvEvent(parseJson(v).ok ? JSON.parse(v) : undefined).ok).length + 1;
  t.ok(await eventually(async () => (await malformed("kv_events")) - before === bad, 5_000), `each malformed event dropped and counted (${(await malformed("kv_events")) - before} of ${bad} malformed, ${values.length + junk.length + 1} sent)`);
  t.same(await appAnswers(), [], "the app's routes still answer without a 500");
});

t.test("warm arrivals: each malformed one dropped and counted; the router keeps placing", async (t) => {
  const before = await malformed("warm_arrivals");
  const valid = { router: "another-replica", key: "0123456789abcdef" };
  const values = sample(mutations(valid));
  const junk = ["{", "null", "[]", JSON.stringify({ ...valid, key: "" }), JSON.stringify({ router: 7, key: "k" })];
  for (const v of [...values, ...junk]) nc.publish(warmArrivalsSubject(POOL), v);
  nc.publish("interlace.warmarrivals.only-one-token", JSON.stringify(valid));
  await nc.flush();
  t.ok(await eventually(async () => (await malformed("warm_arrivals")) - before >= junk.length + 1, 5_000), `malformed arrivals dropped and counted (${(await malformed("warm_arrivals")) - before} of ${values.length + junk.length + 1} sent)`);
  t.same(await appAnswers(), [], "the app's routes still answer without a 500");
});

t.test("program keys: junk under any program key never stops the router serving programs", async (t) => {
  const programs = await openProgramsBucket(nc);
  const id = "prog_000000000000000000000000";
  const keys = fc.constantFrom(`${id}.spec`, `${id}.lease`, `${id}.cancel`, `${id}.e.0`, `${id}.e.x`, "x.lease", "prog_zz.lease");
  const problems: string[] = [];
  for (const [key, value] of sample(fc.tuple(keys, fc.oneof(mutations({ holder: "other/1", ms: 1, done: false }), mutations({ id, config: app, principal: "", startedAt: 0, mutations: [] }))))) {
    await programs.put(key, value);
    for (const path of [`/v1/apps/default/fz/programs/${id}`, `/v1/apps/default/fz/programs/${id}/events`]) {
      const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5_000) }).catch((err: unknown) => ({ status: 0, text: async () => String(err), body: null }));
      if (res.status === 0 || res.status >= 500) problems.push(`${path} → ${res.status} ${(await res.text()).slice(0, 200)} after ${key} ${value.slice(0, 200)}`);
      else await (res as Response).body?.cancel();
    }
  }
  t.same(problems.slice(0, 5), [], `${RUNS} fuzzed program entries: no 500`);
  t.same(await appAnswers(), [], "new programs still run through the router");
  const health = await fetch(`${base}/healthz`);
  t.equal(health.status, 200, "the router is alive");
});

t.test("router presence and runner heartbeats: the operator's live state stays whole numbers, never throws", async (t) => {
  const routers = await openRoutersBucket(nc);
  const runners = await openRunnersBucket(nc);
  const presence = { router: "r", at: Date.now(), apps: { "default/fz": { hash: "h", activeSessions: 1 } }, held: { "default/pool": 1 } };
  const runner = { runner: "r", at: Date.now(), inFlight: 1 };
  const problems: string[] = [];
  for (const [p, r] of sample(fc.tuple(mutations(presence), mutations(runner)))) {
    await routers.put("fuzz-other", p.replace(/"at":\d+/, `"at":${Date.now()}`));
    await runners.put(runnerKey(POOL, "r"), r.replace(/"at":\d+/, `"at":${Date.now()}`));
    try {
      const status = await live.app(app);
      const held = await live.heldRequests("default", POOL.name);
      const inFlight = await live.callsInFlight("default", POOL.name);
      for (const [name, n] of [["routers", status.routers], ["activeSessions", status.activeSessions], ["held", held], ["inFlight", inFlight]] as const) {
        if (!Number.isInteger(n) || n < 0) problems.push(`${name} = ${JSON.stringify(n)} after ${p.slice(0, 200)} / ${r.slice(0, 200)}`);
      }
    } catch (err) {
      problems.push(`threw ${(err as Error).message} after ${p.slice(0, 200)} / ${r.slice(0, 200)}`);
    }
  }
  t.same(problems.slice(0, 5), [], `${RUNS} fuzzed presences and runner heartbeats: whole, non-negative counts`);
});
