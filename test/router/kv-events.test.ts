/**
 * The precise prefix index on real processes (nats-server, two engine
 * processes of two sequences each on the test model, routers in this
 * process): engines publish KV events, and a router with
 * `--prefix-index events` keeps its per-block index current from them, so
 * it sees a prefix stored or evicted at once, where a router with
 * `--prefix-index heartbeat` learns it only at the engine's next heartbeat.
 * Heartbeats are 10 s apart here, so "before the next heartbeat" is checked
 * against the heartbeat's own timestamp. An out-of-sequence event (a gap)
 * sends the events router back to the engine's heartbeat until the next one
 * resyncs it. The endpoint picker keeps the same events index as the router.
 */
import t from "tap";
import { prefixHashChain } from "../../common/src/index.js";
import { kvEventsSubject, type KvEvent } from "../../common/src/protocol/index.js";
import { startRouter, type Router } from "../../router/src/index.js";
import { routerOptions } from "../../router/src/config.js";
import { EventPrefixIndex } from "../../router/src/event-prefix-index.js";
import { DEFAULT_PREFIX_SLACK, place } from "../../router/src/placement.js";
import type { EngineRegistry } from "../../router/src/engine-registry.js";
import { pickerOptions } from "../../router/src/picker/config.js";
import { startPicker } from "../../router/src/picker/picker-server.js";
import { appConfig, log, openSession, POOL, QUICK, startStack, streamEvents } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(300_000);

const HEARTBEAT_MS = 10_000;
const stack = await startStack(t, {
  engines: 2,
  routers: 1,
  router: { prefixIndex: "events", engineTtlMs: 4 * HEARTBEAT_MS },
  // No capacity beats: a session ending would beat at once, and the heartbeat router here must see only the periodic heartbeats.
  engineArgs: ["--heartbeat-ms", String(HEARTBEAT_MS), "--capacity-check-ms", "0"],
});
const eventsRouter = stack.routers[0]!;
const events = stack.url(0);
const heartbeatRouter = await startRouter(
  routerOptions({ natsUrl: stack.nats.url, routerId: "router-heartbeat", prefixIndex: "heartbeat", engineTtlMs: 4 * HEARTBEAT_MS, logLevel: "silent" }),
  log.child({ router: "heartbeat" }),
);
t.teardown(() => heartbeatRouter.close());
// The endpoint picker, the other front door, keeps the same events index for its pool.
const picker = await startPicker(pickerOptions({ natsUrl: stack.nats.url, pool: { namespace: "default", name: POOL }, engineTtlMs: 4 * HEARTBEAT_MS, logLevel: "silent" }), log.child({ picker: "events" }));
t.teardown(() => picker.close());
const alpha = appConfig("alpha");
await stack.putApp(alpha);
t.ok(await eventually(() => heartbeatRouter.engines.loads("default", POOL).length === 2 && heartbeatRouter.apps.get("default", "alpha") !== undefined, 20_000));

/** alpha's own blocks: its system prompt and its tool block. */
const appChain = prefixHashChain({ messages: [{ role: "system", content: alpha.systemPrompt }], tools: alpha.tools });
const held = (router: { engines: EngineRegistry }, pod: string): number => router.engines.loads("default", POOL).find((e) => e.pod === pod)?.blocks.leading(appChain).matched ?? -1;
const beatAt = (router: Router, pod: string): number | undefined => router.engines.find("default", pod)?.at;
/** Where `router` would place an alpha session now (its own index, no side effects). */
const wouldPlace = (router: Router): ReturnType<typeof place> =>
  place(router.engines.loads("default", POOL), { chain: appChain, affinityKey: appChain.at(-1)! }, { policy: "prefix-affinity", loadFactor: 1.25, prefixSlack: DEFAULT_PREFIX_SLACK, turn: 0 });

let E = "";

t.test("a new prompt that shares a prefix is placed on the engine that has its blocks", async (t) => {
  const pods = ["engine-a", "engine-b"];
  const beatsBefore = pods.map((p) => beatAt(heartbeatRouter, p));
  const first = await openSession(events, "alpha", QUICK);
  await streamEvents(events, "alpha", first.id);
  E = first.engine;
  t.ok(await eventually(() => held(eventsRouter, E) === 2, 5_000), "the events index has alpha's blocks on E");
  const heartbeatView = held(heartbeatRouter, E);
  const noBeatSince = beatAt(heartbeatRouter, E) === beatsBefore[pods.indexOf(E)];
  const second = await openSession(events, "alpha", { ...QUICK, prompt: "Say hello to someone else." });
  t.equal(second.engine, E, "placed where its prefix is");
  t.equal(second.placement.reason, "prefix");
  t.ok(second.placement.matchedSegments >= 2, `matched ${second.placement.matchedSegments} segments`);
  await streamEvents(events, "alpha", second.id);
  if (noBeatSince) t.equal(heartbeatView, 0, "E's heartbeat had not shown the blocks yet: the heartbeat index would have missed");
  else t.comment("E beat in between: the heartbeat index knew too (compared in the eviction test)");
});

t.test("an engine that evicts a prefix loses the events router's preference before its next heartbeat; the heartbeat router still prefers it", async (t) => {
  t.ok(E !== "", "the first test placed alpha");
  const engine = stack.engines.get(E)!;
  // Start right after a heartbeat that shows alpha on E, and E idle (one taken while the first test's sessions ran
  // shows E full, so no router would place there): the next is HEARTBEAT_MS away.
  const idleBeat = (): boolean => held(heartbeatRouter, E) === 2 && heartbeatRouter.engines.loads("default", POOL).find((e) => e.pod === E)?.load === 0;
  t.ok(await eventually(idleBeat, 2 * HEARTBEAT_MS + 5_000), "a heartbeat shows alpha's blocks on E, and E idle");
  const synced = beatAt(heartbeatRouter, E);
  // With each router's view of the loads in the message: a placement away from E is then readable (a reservation still counted, a busy beat).
  const view = (router: Router): string => JSON.stringify(router.engines.loads("default", POOL).map((e) => ({ pod: e.pod, load: e.load, free: e.free, held: e.blocks.leading(appChain).matched })));
  t.equal(wouldPlace(eventsRouter).order[0], E, `both routers prefer E for alpha (events router: ${view(eventsRouter)})`);
  t.equal(wouldPlace(heartbeatRouter).order[0], E, `heartbeat router: ${view(heartbeatRouter)}`);
  t.equal(held(picker, E), 2, "the endpoint picker sees alpha's blocks on E too");

  // Two other prompts at once on E's two sequences overwrite alpha's cells (no prefix store): an eviction.
  const unrelated = (n: number): Promise<Response> =>
    fetch(`${engine.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "test", messages: [{ role: "system", content: `Unrelated assistant number ${n}, with a prompt of its own.` }, { role: "user", content: "Count to three." }], max_tokens: 24 }),
    });
  for (const res of await Promise.all([unrelated(1), unrelated(2)])) {
    const body = await res.text();
    t.equal(res.status, 200, body.slice(0, 120));
  }

  t.ok(await eventually(() => held(eventsRouter, E) === 0, 5_000), "the events index dropped alpha's blocks on E");
  t.ok(await eventually(() => held(picker, E) === 0, 5_000), "and so did the endpoint picker's: both front doors see the eviction");
  const precise = wouldPlace(eventsRouter);
  const coarse = wouldPlace(heartbeatRouter);
  const placed = await openSession(events, "alpha", { ...QUICK, prompt: "And once more." });
  t.equal(beatAt(heartbeatRouter, E), synced, "no heartbeat from E meanwhile");
  t.equal(held(heartbeatRouter, E), 2, "the heartbeat index still has alpha on E");
  t.equal(coarse.order[0], E, "the heartbeat router would still prefer E");
  t.equal(coarse.reason, "prefix");
  t.not(precise.reason, "prefix", "the events router no longer prefers E for alpha");
  t.equal(precise.matched, 0);
  t.not(placed.placement.reason, "prefix", "and places alpha as a miss");
  t.equal(placed.placement.matchedSegments, 0);
  await streamEvents(events, "alpha", placed.id);
});

t.test("a gap in an engine's events falls back to its heartbeat until the next heartbeat resyncs it", async (t) => {
  const index = eventsRouter.engines.prefixIndex;
  if (!(index instanceof EventPrefixIndex)) throw new Error("the events router has no events index");
  const F = ["engine-a", "engine-b"].find((p) => p !== E)!;
  const position = eventsRouter.engines.find("default", F)?.kvEvents;
  t.ok(position !== undefined, "F's heartbeat names its KV event position");
  t.equal(index.source("default/pool", F), "events");
  const heldBefore = held(eventsRouter, F);
  // An event numbered past the next one, as after lost events, claiming alpha's blocks on F.
  const skipped: KvEvent = { pod: F, epoch: position!.epoch, seq: position!.seq + 1000, stored: appChain };
  stack.nc.publish(kvEventsSubject({ namespace: "default", name: POOL }), JSON.stringify(skipped));
  t.ok(await eventually(() => index.source("default/pool", F) === "heartbeat", 5_000), "out of sync: F is answered from its heartbeat");
  t.equal(held(eventsRouter, F), heldBefore, "the event after the gap is not applied");
  const beat = beatAt(eventsRouter, F);
  t.ok(await eventually(() => beatAt(eventsRouter, F) !== beat && index.source("default/pool", F) === "events", 2 * HEARTBEAT_MS + 5_000), "F's next heartbeat resyncs it");
  t.equal(held(eventsRouter, F), heldBefore, "the skipped event was not replayed after the resync");
});
