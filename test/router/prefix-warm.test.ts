/**
 * Hot-prefix warming through the real stack (nats-server, two engine
 * processes on the `test` model with a prefix store of three, routers in this
 * process). An app whose sessions keep arriving is held on one engine by
 * prefix affinity; with warming on, the router asks the other, idle engine
 * to prefill the app's shared prefix into its store, that engine's heartbeat
 * then advertises it, and the app's sessions that go there fork it instead
 * of prefilling it. The control: another app through a router with warming
 * off, whose session spilled to the other engine prefills its whole prompt.
 */
import t, { type Test } from "tap";
import { prefixHashChain, type SessionEvent } from "../../common/src/index.js";
import { startRouter } from "../../router/src/index.js";
import { routerOptions } from "../../router/src/config.js";
import { mergeSessionRequest } from "../../router/src/request-merge.js";
import { appConfig, log, longSession, openSession, POOL, QUICK, startStack, streamEvents, type Opened } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(300_000);

// `pin`: a session waiting on its tool keeps its sequence, so three sessions of one app fill an engine of two and the third spills.
// A store of three: the file's three apps have two homes at most on an engine, so a warm (a replica, which never replaces a home) finds an entry.
const stack = await startStack(t, { engines: 2, routers: 1, router: { prefixWaitMs: 0 }, engineArgs: ["--kv-retention", "pin", "--prefix-store", "3"] });
const warming = stack.url(0);
const system = (name: string): string => `You are ${name}, the support agent of a bicycle shop. ${"Answer briefly, check the order system, and use tools when useful. ".repeat(8)}`;
const alpha = appConfig("alpha", { systemPrompt: system("alpha") });
const beta = appConfig("beta", { systemPrompt: system("beta") });
await stack.putApp(alpha);
await stack.putApp(beta);

const plain = await startRouter(routerOptions({ natsUrl: stack.nats.url, routerId: "router-nowarm", prefixWaitMs: 0, prefixWarmSessions: 0, logLevel: "silent" }), log.child({ router: "nowarm" }));
t.teardown(() => plain.close());
const notWarming = `http://127.0.0.1:${plain.port}`;
await eventually(() => plain.engines.loads("default", POOL).length === 2 && plain.apps.get("default", "beta") !== undefined, 10_000);

const shared = (app: typeof alpha): string[] => prefixHashChain({ messages: [{ role: "system", content: app.systemPrompt }], tools: app.tools });
const holds = (router: typeof plain, pod: string, chain: string[]): boolean =>
  router.engines.loads("default", POOL).find((e) => e.pod === pod)?.blocks.leading(chain).matched === chain.length;
const usage = (events: SessionEvent[]): { promptTokens: number; prefilledTokens: number } => {
  const done = events.find((e) => e.type === "done");
  if (done === undefined || done.type !== "done") throw new Error(`no done event: ${JSON.stringify(events.slice(-2))}`);
  return done.usage;
};

/** Three quick sessions of an app one after another (it turns hot), each once the router sees the last one's prefix and its engine idle again. */
async function burst(t: Test, base: string, router: typeof plain, app: typeof alpha): Promise<string> {
  let first = "";
  for (let i = 0; i < 3; i++) {
    const s = await openSession(base, app.name, QUICK);
    first ||= s.engine;
    t.equal(s.engine, first, `quick session ${i + 1} of ${app.name} on its prefix's engine (${s.placement.reason})`);
    await streamEvents(base, app.name, s.id);
    await eventually(() => holds(router, first, shared(app)) && router.engines.loads("default", POOL).every((e) => e.load === 0), 5_000);
  }
  return first;
}

/** Three sessions that wait on a tool, opened together: two fill the prefix's engine, the third spills. */
async function longOnes(base: string, app: string): Promise<(Opened & { usage: { promptTokens: number; prefilledTokens: number } })[]> {
  const opened: Opened[] = [];
  for (let i = 0; i < 3; i++) opened.push(await openSession(base, app, longSession(1500)));
  return Promise.all(opened.map(async (s) => ({ ...s, usage: usage(await streamEvents(base, app, s.id)) })));
}

t.test("control, warming off: the session spilled to the other engine prefills the whole prompt", async (t) => {
  const first = await burst(t, notWarming, plain, beta);
  t.ok(await eventually(() => holds(plain, first, shared(beta)), 5_000), "beta's prefix on its first engine");
  const other = [...stack.engines.keys()].find((p) => p !== first)!;
  t.notOk(holds(plain, other, shared(beta)), "and not on the other");
  const sessions = await longOnes(notWarming, "beta");
  const spilled = sessions.filter((s) => s.engine === other);
  t.equal(spilled.length, 1, `one of three spilled: ${sessions.map((s) => `${s.engine} ${s.placement.reason}`).join(", ")}`);
  t.equal(spilled[0]!.placement.reason, "prefix-spill");
  t.ok(spilled[0]!.usage.prefilledTokens > 0.9 * spilled[0]!.usage.promptTokens, `spilled session prefilled ${spilled[0]!.usage.prefilledTokens} of ${spilled[0]!.usage.promptTokens}: a cold prefill`);
  t.notMatch(await (await fetch(`${notWarming}/metrics`)).text(), /interlace_router_prefix_warms_total\{outcome="warmed"\} [1-9]/, "no warm asked");
});

t.test("warming on: the hot app's prefix is warmed onto the idle engine, and its sessions there fork it", async (t) => {
  const router = stack.routers[0]!;
  const first = await burst(t, warming, router, alpha);
  const other = [...stack.engines.keys()].find((p) => p !== first)!;
  t.ok(await eventually(async () => /interlace_router_prefix_warms_total\{outcome="warmed"\} 1/.test(await (await fetch(`${warming}/metrics`)).text()), 30_000), "one warm, answered warmed");
  t.ok(await eventually(() => holds(router, other, shared(alpha)) && holds(router, first, shared(alpha)), 5_000), `both engines advertise alpha's prefix (warmed onto ${other})`);
  const engineMetrics = await (await fetch(`${stack.engines.get(other)!.url}/metrics`)).text();
  t.match(engineMetrics, /interlace_engine_prefix_warms_total\{outcome="warmed"\} 1/, "the engine counts it");
  // A second router replica deciding the same warm: the engine answers 200, a no-op.
  const again = await fetch(`${stack.engines.get(other)!.url}/v1/prefixes`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(mergeSessionRequest(alpha, QUICK).body) });
  t.equal(again.status, 200);
  t.match(await again.json(), { outcome: "held", prefilledTokens: 0 });

  const before = await (await fetch(`${stack.engines.get(other)!.url}/metrics`)).text();
  const hits = (text: string): number => Number(/interlace_engine_prefix_store_hits_total (\d+)/.exec(text)?.[1] ?? "0");
  const sessions = await longOnes(warming, "alpha");
  const there = sessions.filter((s) => s.engine === other);
  t.ok(there.length >= 1, `sessions on the warmed engine: ${sessions.map((s) => `${s.engine} ${s.placement.reason}`).join(", ")}`);
  for (const s of there) {
    t.ok(s.usage.prefilledTokens < 0.3 * s.usage.promptTokens, `session on ${other} prefilled ${s.usage.prefilledTokens} of ${s.usage.promptTokens}: the warmed prefix was forked`);
  }
  const after = await (await fetch(`${stack.engines.get(other)!.url}/metrics`)).text();
  t.ok(hits(after) - hits(before) >= 1, "forked from the prefix store");
});

t.test("two router replicas: an app's arrivals count over both, so one hot across them is warmed though neither placed three", async (t) => {
  // A second replica with warming on, seeing the first only through NATS. Before arrivals were shared,
  // each counted its own: alternating A, B, A left A at two and B at one, and no warm was asked.
  const replica = await startRouter(routerOptions({ natsUrl: stack.nats.url, routerId: "router-warm-b", prefixWaitMs: 0, logLevel: "silent" }), log.child({ router: "warm-b" }));
  t.teardown(() => replica.close());
  const b = `http://127.0.0.1:${replica.port}`;
  const a = stack.routers[0]!;
  const gamma = appConfig("gamma", { systemPrompt: system("gamma") });
  await stack.putApp(gamma);
  await eventually(() => replica.engines.loads("default", POOL).length === 2 && replica.apps.get("default", "gamma") !== undefined && a.apps.get("default", "gamma") !== undefined, 10_000);
  const warms = async (): Promise<number> => {
    let n = 0;
    for (const base of [warming, b]) n += Number(/interlace_router_prefix_warms_total\{outcome="warmed"\} (\d+)/.exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? "0");
    return n;
  };
  const before = await warms();
  let first = "";
  for (const [i, base] of [warming, b, warming].entries()) {
    const s = await openSession(base, "gamma", QUICK);
    first ||= s.engine;
    t.equal(s.engine, first, `session ${i + 1} through ${base === b ? "B" : "A"} on gamma's prefix engine (${s.placement.reason})`);
    await streamEvents(base, "gamma", s.id);
    await eventually(() => [a, replica].every((r) => holds(r, first, shared(gamma)) && r.engines.loads("default", POOL).every((e) => e.load === 0)), 5_000);
  }
  const other = [...stack.engines.keys()].find((p) => p !== first)!;
  t.ok(await eventually(async () => (await warms()) === before + 1, 30_000), `one warm over both replicas (before ${before}, now ${await warms()})`);
  t.ok(await eventually(() => holds(replica, other, shared(gamma)) && holds(a, other, shared(gamma)), 5_000), `both replicas see gamma's prefix warmed onto ${other}`);
});
