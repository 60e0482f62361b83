/**
 * Apps' home engines through the real stack (nats-server, two engine
 * processes on the `test` model with a prefix store of one entry, two router
 * replicas in this process). Both replicas seed each app's first session on
 * the home the even assignment gives it; a session that spills off its
 * app's full home reaches the other engine as a `replica`, and that
 * engine's store keeps its own app's prefix rather than the spilled one.
 * The control, on a real engine: the same spilled session sent as a home
 * replaces the store's entry, as plain LRU did for every session.
 */
import t from "tap";
import { prefixHashChain, type SessionEvent } from "../../common/src/index.js";
import type { AppConfig } from "../../common/src/protocol/index.js";
import { PREFIX_ROLE_HEADER } from "../../common/src/protocol/index.js";
import { assignHomes } from "../../router/src/app-homes.js";
import { mergeSessionRequest } from "../../router/src/request-merge.js";
import { appConfig, openSession, parkedSession, POOL, QUICK, startStack, streamEvents } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(300_000);

const stack = await startStack(t, { engines: 2, routers: 2, router: { prefixWaitMs: 0 }, engineArgs: ["--kv-retention", "pin", "--prefix-store", "1"] });
const system = (name: string): string => `You are ${name}, the support agent of a bicycle shop. ${"Answer briefly, check the order system, and use tools when useful. ".repeat(8)}`;
const key = (app: AppConfig): string => mergeSessionRequest(app, QUICK).affinityKey;
const pods = [...stack.engines.keys()];
const alpha = appConfig("alpha", { systemPrompt: system("alpha") });
// A second app whose arrival does not move alpha's home: alpha's first session is placed while alpha is the only active
// app (its home then is its ring's first engine), and the pair's even assignment keeps it there. Which name does is a
// fact of the hashes, so the test picks it rather than depend on it.
const beta = ["beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
  .map((name) => appConfig(name, { systemPrompt: system(name) }))
  .find((b) => {
    const pair = assignHomes([key(alpha), key(b)], pods);
    return pair.get(key(alpha)) === assignHomes([key(alpha)], pods).get(key(alpha)) && pair.get(key(alpha)) !== pair.get(key(b));
  })!;
await stack.putApp(alpha);
await stack.putApp(beta);

const homes = assignHomes([key(alpha), key(beta)], pods);
const homeOf = (app: AppConfig): string => homes.get(key(app))!;
const shared = (app: AppConfig): string[] => prefixHashChain({ messages: [{ role: "system", content: app.systemPrompt }], tools: app.tools });
const holds = (pod: string, app: typeof alpha): boolean =>
  stack.routers[0]!.engines.loads("default", POOL).find((e) => e.pod === pod)?.blocks.leading(shared(app)).matched === shared(app).length;
const done = (events: SessionEvent[]): boolean => events.some((e) => e.type === "done");
const endpoint = (pod: string): string => stack.routers[0]!.engines.find("default", pod)!.endpoint;
const evictions = async (pod: string): Promise<number> => {
  const text = await (await fetch(`${endpoint(pod)}/metrics`)).text();
  return Number(/^interlace_engine_prefix_store_evictions_total (\S+)$/m.exec(text)?.[1] ?? "NaN");
};

t.test("both replicas seed each app on the home the even assignment gives it", async (t) => {
  t.not(homeOf(alpha), homeOf(beta), "two apps, two engines: one home each");
  const a = await openSession(stack.url(0), "alpha", QUICK);
  t.equal(a.engine, homeOf(alpha), `alpha's first session on its home (${a.placement.reason})`);
  t.ok(done(await streamEvents(stack.url(0), "alpha", a.id)));
  // The other replica, which placed nothing of beta's before, seeds it on the same home any replica would.
  const b = await openSession(stack.url(1), beta.name, QUICK);
  t.equal(b.engine, homeOf(beta), `beta's first session on its home (${b.placement.reason})`);
  t.ok(done(await streamEvents(stack.url(1), beta.name, b.id)));
  t.ok(await eventually(() => holds(homeOf(alpha), alpha) && holds(homeOf(beta), beta), 5_000), "each home's store holds its app");
});

t.test("a session that spills off its app's full home does not replace the other engine's own app in its store", async (t) => {
  const before = await evictions(homeOf(beta));
  // Fill alpha's home (two sequences, pinned while their calls run); the next alpha session spills to beta's home.
  const parked = [await parkedSession(t, stack.url(0), "alpha"), await parkedSession(t, stack.url(1), "alpha")];
  t.same(parked.map((p) => p.engine), [homeOf(alpha), homeOf(alpha)]);
  const spilled = await openSession(stack.url(0), "alpha", QUICK);
  t.equal(spilled.engine, homeOf(beta), `spilled to the other engine (${spilled.placement.reason})`);
  t.equal(spilled.placement.reason, "prefix-spill");
  t.ok(done(await streamEvents(stack.url(0), "alpha", spilled.id)));
  for (const p of parked) await p.end();
  // Given time for a heartbeat and the store copy that a home session's end would make.
  await new Promise((r) => setTimeout(r, 1_000));
  t.ok(await eventually(() => holds(homeOf(beta), beta), 5_000), "beta's home still holds beta");
  t.equal(await evictions(homeOf(beta)), before, "its store replaced nothing");
});

t.test("control on the real engine: the same spilled session sent as a home replaces the store's entry", async (t) => {
  const body = mergeSessionRequest(alpha, QUICK).body;
  const send = async (role: string): Promise<Response> =>
    fetch(`${endpoint(homeOf(beta))}/v1/sessions`, { method: "POST", headers: { "content-type": "application/json", [PREFIX_ROLE_HEADER]: role }, body: JSON.stringify(body) });
  const bad = await send("owner");
  t.equal(bad.status, 400, "a role that is none is refused");
  t.match(await bad.text(), /x-interlace-prefix-role must be one of home, replica/);
  const before = await evictions(homeOf(beta));
  const res = await send("home");
  t.equal(res.status, 201);
  const { id } = (await res.json()) as { id: string };
  const events = await fetch(`${endpoint(homeOf(beta))}/v1/sessions/${id}/events`, { headers: { accept: "text/event-stream" } });
  await events.text();
  t.ok(await eventually(async () => (await evictions(homeOf(beta))) === before + 1, 5_000), "the home offer replaced beta's entry");
});
