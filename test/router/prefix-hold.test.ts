/**
 * Prefix affinity holds a session for the engine that holds its prefix when
 * that engine is full, within the load bound or past it (real nats-server,
 * two real engine processes of two sequences each, routers in this process):
 * a router with `prefixWaitMs` places it there as soon as a sequence frees,
 * though the other engine had room all along; one whose wait runs out spills
 * then.
 */
import t, { type Test } from "tap";
import { prefixHashChain } from "../../common/src/index.js";
import { startRouter } from "../../router/src/index.js";
import { routerOptions } from "../../router/src/config.js";
import { appConfig, log, longSession, openSession, POOL, QUICK, startStack, streamEvents, type Opened } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(240_000);

// `pin`: the prefix engine, its sequences held by paused sessions, stays full, so the router's hold and spill are what is tested (under the default `eta` the engine would admit by taking a paused session's sequence).
const stack = await startStack(t, { engines: 2, routers: 1, router: { prefixWaitMs: 60_000 }, engineArgs: ["--kv-retention", "pin"] });
const holding = stack.url(0);
const alpha = appConfig("alpha");
const beta = appConfig("beta");
await stack.putApp(alpha);
await stack.putApp(beta);

async function extraRouter(prefixWaitMs: number): Promise<string> {
  const router = await startRouter(routerOptions({ natsUrl: stack.nats.url, routerId: `router-wait-${prefixWaitMs}`, prefixWaitMs, logLevel: "silent" }), log.child({ prefixWaitMs }));
  t.teardown(() => router.close());
  await eventually(() => router.engines.loads("default", POOL).length === 2 && router.apps.get("default", "beta") !== undefined, 10_000);
  return `http://127.0.0.1:${router.port}`;
}
const impatient = await extraRouter(400);

const alphaPrefix = prefixHashChain({ messages: [{ role: "system", content: alpha.systemPrompt }], tools: alpha.tools })[1]!;
const loadOf = (pod: string): number | undefined => stack.routers[0]!.engines.loads("default", POOL).find((e) => e.pod === pod)?.load;
const close = (s: Opened, app = "alpha"): Promise<Response> => fetch(`${holding}/v1/apps/default/${app}/sessions/${s.id}`, { method: "DELETE" });

/** The holding router's count of holds that ended on the prefix's engine. */
async function holdsPlaced(): Promise<number> {
  const m = /^interlace_router_prefix_holds_total\{outcome="placed"\} (\d+)$/m.exec(await (await fetch(`${holding}/metrics`)).text());
  return m === null ? 0 : Number(m[1]);
}

/** Opens an alpha session while E is full, checks it is held, frees a sequence on E by closing `freeing`, and checks it lands there. */
async function heldUntilFreed(t: Test, E: string, freeing: Opened, why: string): Promise<Opened> {
  let settled = false;
  const held = openSession(holding, "alpha", QUICK).finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, 1500));
  t.notOk(settled, why);
  t.equal((await close(freeing)).status, 200);
  const placed = await held;
  t.equal(placed.engine, E, "placed on the prefix's engine once a sequence freed");
  t.equal(placed.placement.reason, "prefix");
  return placed;
}

t.test("a full prefix engine within the bound: held for, not spilled", async (t) => {
  // alpha's prefix on one engine, E, which then runs two alpha sessions (full); beta's one session runs on F.
  const warm = await openSession(holding, "alpha", QUICK);
  await streamEvents(holding, "alpha", warm.id);
  const E = warm.engine;
  t.ok(await eventually(() => stack.routers[0]!.engines.loads("default", POOL).find((e) => e.pod === E)?.blocks.leading([alphaPrefix]).matched === 1, 5_000));
  t.ok(await eventually(() => loadOf(E) === 0, 5_000), "the warm-up session has left E");
  const a1 = await openSession(holding, "alpha", longSession());
  const a2 = await openSession(holding, "alpha", longSession());
  t.same([a1.engine, a2.engine], [E, E], "both on the prefix's engine (within the bound)");
  const b = await openSession(holding, "beta", longSession());
  const F = b.engine;
  t.not(F, E, "beta, a miss, goes to the idler engine");
  t.ok(await eventually(() => loadOf(E) === 2 && loadOf(F) === 1, 5_000), "heartbeats show E full, F with one free sequence");
  // E at 2 of 2, F at 1: the bound is ceil(1.25 * 4 / 2) = 3, so E + 1 is within it.

  const placed = await heldUntilFreed(t, E, a1, "held while E is full, though F has a free sequence");
  t.ok(placed.placement.matchedSegments >= 2, "system prompt and tools resident");
  await streamEvents(holding, "alpha", placed.id);
  t.equal(await holdsPlaced(), 1, "the hold counted as placed on the prefix's engine");
  // E full again (a2 and a3), F at 1.
  const a3 = await openSession(holding, "alpha", longSession());
  t.equal(a3.engine, E);
  t.ok(await eventually(() => loadOf(E) === 2 && loadOf(F) === 1, 5_000));

  const started = performance.now();
  const gaveUp = await openSession(impatient, "alpha", QUICK);
  t.ok(performance.now() - started >= 350, "waited about its 400 ms");
  t.equal(gaveUp.engine, F, "the wait ran out: spilled");
  t.equal(gaveUp.placement.reason, "prefix-spill");
  await streamEvents(impatient, "alpha", gaveUp.id);
  t.match(await (await fetch(`${impatient}/metrics`)).text(), /interlace_router_prefix_holds_total\{outcome="spilled"\} 1/);
  t.ok(await eventually(() => loadOf(F) === 1, 5_000));

  await close(a2);
  await close(a3);
  await close(b, "beta");
});

t.test("a full prefix engine past the bound, the other idle: held for too, not spilled cold", async (t) => {
  const E = (await openSession(holding, "alpha", QUICK)).engine;
  t.ok(await eventually(() => stack.routers[0]!.engines.loads("default", POOL).every((e) => e.load === 0), 10_000), "both engines idle");
  const a1 = await openSession(holding, "alpha", longSession());
  const a2 = await openSession(holding, "alpha", longSession());
  t.same([a1.engine, a2.engine], [E, E], "both on the prefix's engine");
  const F = stack.routers[0]!.engines.loads("default", POOL).find((e) => e.pod !== E)!.pod;
  t.ok(await eventually(() => loadOf(E) === 2 && loadOf(F) === 0, 5_000), "heartbeats show E full, F idle");
  // E at 2 of 2, F at 0: the bound is ceil(1.25 * 3 / 2) = 2, so E + 1 is past it. A spill would prefill alpha's prompt cold on F.

  // Counted from here: a session above may have waited a moment for E too (a placement not yet in a heartbeat) and been placed there.
  const placedBefore = await holdsPlaced();
  const placed = await heldUntilFreed(t, E, a1, "held while E is full, though F is idle");
  await streamEvents(holding, "alpha", placed.id);
  t.equal(await holdsPlaced(), placedBefore + 1, "this hold counted as placed on the prefix's engine");
  await close(a2);
});
