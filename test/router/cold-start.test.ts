/**
 * @module Scale from zero through the router: a real nats-server, real
 * routers and a real engine process started only after the request was
 * sent. A request to an app whose EnginePool has no ready engine is held
 * (a bounded queue with a timeout) and placed once the engine's first
 * heartbeat arrives; past the timeout it gets 503 with `Retry-After`, and
 * beyond the bound 503 at once. The hold's gauge, histogram and refusal
 * counter say what happened, and the router's presence carries the count
 * held per pool (what the operator's autoscaler wakes a pool at zero on).
 */
import t from "tap";
import { connect } from "@nats-io/transport-node";
import { appKey, encodeToken, openAppsBucket, openRoutersBucket, type AppConfig, type RouterPresence } from "../../common/src/protocol/index.js";
import { startRouter, type Router } from "../../router/src/index.js";
import { routerOptions, type RouterOptions } from "../../router/src/config.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { waitFor } from "../helpers/wait.js";
import { appConfig, log, POOL, postJson, QUICK, spawnPoolEngine, streamEvents } from "./fixtures.js";

t.setTimeout(300_000);

const nats = await startNatsServer(t);
const nc = await connect({ servers: nats.url });
t.teardown(() => nc.close());
const apps = await openAppsBucket(nc);
const presences = await openRoutersBucket(nc);

async function presenceOf(id: string): Promise<RouterPresence | undefined> {
  const e = await presences.get(encodeToken(id));
  return e?.operation === "PUT" ? (e.json() as RouterPresence) : undefined;
}

async function router(id: string, options: Partial<RouterOptions>): Promise<{ router: Router; base: string }> {
  const r = await startRouter(routerOptions({ natsUrl: nats.url, routerId: id, upstreamTimeoutMs: 20_000, logLevel: "silent", ...options }), log.child({ router: id }));
  t.teardown(() => r.close());
  return { router: r, base: `http://127.0.0.1:${r.port}` };
}

async function putApp(config: AppConfig, routers: Router[]): Promise<void> {
  await apps.put(appKey(config.namespace, config.name), JSON.stringify(config));
  await waitFor(`routers to serve ${config.name}`, () => routers.every((r) => r.apps.get(config.namespace, config.name) !== undefined), 10_000);
}

async function held(r: Router, pool: string): Promise<number> {
  return (await r.metrics.coldStartHeld.get()).values.find((v) => v.labels["pool"] === `default/${pool}`)?.value ?? 0;
}

async function refusals(r: Router, reason: string): Promise<number> {
  return (await r.metrics.coldStartRefusals.get()).values.find((v) => v.labels["reason"] === reason)?.value ?? 0;
}

interface ErrorBody {
  error: { code: string; message: string };
}

t.test("past the hold timeout: 503 no_engine with Retry-After", async (t) => {
  const { router: r, base } = await router("router-timeout", { coldStartHoldMs: 300, retryAfterSeconds: 7 });
  await putApp(appConfig("idle", { enginePool: { name: "zero" } }), [r]);
  const res = await postJson(`${base}/v1/apps/default/idle/sessions`, QUICK);
  t.equal(res.status, 503);
  t.equal(res.headers.get("retry-after"), "7");
  const body = (await res.json()) as ErrorBody;
  t.equal(body.error.code, "no_engine");
  t.match(body.error.message, /EnginePool default\/zero has no ready engine after holding the request \d+ ms/);
  t.equal(await refusals(r, "timeout"), 1, "counted as a timeout refusal");
  t.equal(await held(r, "zero"), 0, "nothing held any more");
});

t.test("beyond the hold's bound: 503 at once, while the held request still waits", async (t) => {
  const { router: r, base } = await router("router-bound", { coldStartHoldMs: 120_000, coldStartMaxHeld: 1, presenceMs: 60_000 });
  await putApp(appConfig("busy", { enginePool: { name: "starting" } }), [r]);
  const first = new AbortController();
  const waiting = postJson(`${base}/v1/apps/default/busy/sessions`, QUICK, first.signal).catch((err: unknown) => err);
  await waitFor("the first request to be held", async () => (await held(r, "starting")) === 1);
  const second = await postJson(`${base}/v1/apps/default/busy/sessions`, QUICK);
  t.equal(second.status, 503, "the second request is refused");
  t.ok(second.headers.get("retry-after"), "with Retry-After");
  t.match(((await second.json()) as ErrorBody).error.message, /1 request\(s\) already wait for one to start \(the router holds at most 1\)/);
  t.equal(await refusals(r, "queue_full"), 1);
  t.equal(await held(r, "starting"), 1, "the first is still held");
  // Published at once (the presence beat is a minute here), for the autoscaler to wake the pool.
  const presence = await waitFor(
    "the held request in the router's presence",
    async () => {
      const p = await presenceOf("router-bound");
      return p?.held !== undefined ? p : undefined;
    },
    10_000,
  );
  t.same(presence.held, { "default/starting": 1 }, "the presence says how many requests the router holds for the pool");
  first.abort();
  await waiting;
  await waitFor("the client that left to stop being held", async () => (await held(r, "starting")) === 0);
  await r.close();
  t.equal(await presenceOf("router-bound"), undefined, "a closed router's presence is gone");
});

t.test("a request sent while the pool is at zero is served once an engine starts and heartbeats", async (t) => {
  // A generous engine TTL: a freshly started engine on a loaded machine may miss a few 250 ms beats while it warms up.
  const { router: r, base } = await router("router-cold", { coldStartHoldMs: 240_000, engineTtlMs: 15_000 });
  await putApp(appConfig("sleepy"), [r]);
  t.equal(r.engines.loads("default", POOL).length, 0, "no engine yet");
  const pending = postJson(`${base}/v1/apps/default/sleepy/sessions`, QUICK);
  await waitFor("the request to be held", async () => (await held(r, POOL)) === 1);
  // Started only now, as the autoscaler would on demand; its first heartbeat follows its model load.
  await spawnPoolEngine(t, nats.url, "engine-cold");
  const res = await pending;
  t.equal(res.status, 201, "the held request was placed");
  const opened = (await res.json()) as { id: string; engine: string };
  t.equal(opened.engine, "engine-cold");
  const events = await streamEvents(base, "sleepy", opened.id);
  const done = events.at(-1);
  t.equal(done?.type === "done" ? done.reason : done?.type, "eos", "and ran to its end");
  const hist = (await r.metrics.coldStartHoldSeconds.get()).values.find((v) => v.metricName === "interlace_router_cold_start_hold_seconds_count" && v.labels["outcome"] === "ready");
  t.equal(hist?.value, 1, "its hold time was observed as ready");
  t.equal(await held(r, POOL), 0);
});
