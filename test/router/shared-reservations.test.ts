/**
 * Two router processes (the entrypoint the chart runs) placing one burst
 * between two heartbeats, on a real nats-server and two real engine
 * processes (eight sequences each, the generated `test` model): the
 * engines' heartbeats are seconds apart, so only the reservations the
 * routers share (router/src/shared-reservations.ts) tell each replica what
 * the other placed meanwhile. The app's prefix is resident on one engine,
 * so prefix affinity sends every session there up to its bound (the CHWBL
 * bound, or the even share plus the default prefix slack, whichever is
 * larger); with per-process reservations each replica fills it to the bound
 * on its own and together they overfill it (all eight sessions where the
 * bound for eight is six). And the reservations' own rules, two front doors' worth of
 * them on the same bucket: a reservation one writes counts for the other
 * until its holder releases it (refused, its work over, or a heartbeat
 * shows it: by the engine's admission counter, so a heartbeat published
 * before the admission keeps it, even arriving late) or its TTL; two placements decided on the same view cannot both
 * be written; a placement costs two KV writes at most, and one heartbeat
 * releases every session it shows in one write.
 */
import t from "tap";
import { connect } from "@nats-io/transport-node";
import { prefixHashChain } from "../../common/src/index.js";
import { appKey, engineKey, openAppsBucket, openEnginesBucket, openReservationsBucket, parseEngineHeartbeat, parseReservations, reservationsKey, type EngineHeartbeat } from "../../common/src/protocol/index.js";
import { EngineRegistry } from "../../router/src/engine-registry.js";
import { DEFAULT_PREFIX_SLACK } from "../../router/src/placement.js";
import { SharedReservations, type ReservationWrite } from "../../router/src/shared-reservations.js";
import { spawnRouter } from "../helpers/router-process.js";
import { eventually } from "../helpers/wait.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { appConfig, log, longSession, openSession, POOL, QUICK, spawnPoolEngine, streamEvents } from "./fixtures.js";

t.setTimeout(600_000);

const HEARTBEAT_MS = 6_000;
/** The routers' default CHWBL load factor. */
const LOAD_FACTOR = 1.25;
const nats = await startNatsServer(t);
const nc = await connect({ servers: nats.url });
t.teardown(() => nc.close());
// No capacity beats: a session pausing on its call would beat at once, and the release test below needs the next heartbeat seconds away.
for (const pod of ["engine-a", "engine-b"]) await spawnPoolEngine(t, nats.url, pod, ["--sequences", "8", "--heartbeat-ms", String(HEARTBEAT_MS), "--capacity-check-ms", "0"]);
const app = appConfig("alpha");
await (await openAppsBucket(nc)).put(appKey(app.namespace, app.name), JSON.stringify(app));
const heartbeats = await openEnginesBucket(nc);

// Options by environment, as the chart passes them; the engines' TTL spans several of their slow heartbeats.
const env = { NATS_URL: nats.url, ENGINE_TTL_MS: String(HEARTBEAT_MS * 3) };
const routers = [await spawnRouter(t, ["--router-id", "router-a"], env), await spawnRouter(t, ["--router-id", "router-b"], env)];
for (const router of routers) {
  const metric = `interlace_router_engines{pool="default/${POOL}"} 2`;
  if (!(await eventually(async () => (await fetch(`${router.url}/metrics`).then((r) => r.text())).includes(metric), 60_000))) throw new Error(`${router.url} does not see both engines`);
}

async function heartbeat(pod: string): Promise<{ beat: EngineHeartbeat; revision: number } | undefined> {
  for await (const key of await heartbeats.keys()) {
    const e = await heartbeats.get(key);
    if (e === null || e.operation !== "PUT") continue;
    const parsed = parseEngineHeartbeat(e.json());
    if (parsed.ok && parsed.value.pod === pod) return { beat: parsed.value, revision: e.revision };
  }
  return undefined;
}

t.test("one burst split across two routers never puts an engine over the load bound", async (t) => {
  // The app's prefix becomes resident on one engine, E, and its session ends.
  const warm = await openSession(routers[0]!.url, "alpha", QUICK);
  await streamEvents(routers[0]!.url, "alpha", warm.id);
  const E = warm.engine;
  const prefix = prefixHashChain({ messages: [{ role: "system", content: app.systemPrompt }], tools: app.tools })[1]!;
  let seen = -1;
  t.ok(
    await eventually(async () => {
      const h = await heartbeat(E);
      if (h === undefined || !h.beat.prefixes.includes(prefix) || h.beat.activeSessions !== 0) return false;
      seen = h.revision;
      return true;
    }, HEARTBEAT_MS * 4),
    "E's heartbeat shows the prefix resident and no session",
  );
  // Just after that heartbeat reached the routers: the burst lands before the next one.
  await new Promise((r) => setTimeout(r, 300));

  const burst = 8;
  const opened = await Promise.all(Array.from({ length: burst }, (_, i) => openSession(routers[i % 2]!.url, "alpha", longSession())));
  const after = await heartbeat(E);
  const perEngine = new Map<string, number>();
  for (const s of opened) perEngine.set(s.engine, (perEngine.get(s.engine) ?? 0) + 1);
  // The bounds of the burst's last placement with the pool otherwise idle: no placement of it may go past them. Any engine: ceil(c * burst / n);
  // E, which holds the app's prefix: that, or the even share plus the routers' default prefix slack (placement.ts, prefixBound).
  const bound = Math.ceil((LOAD_FACTOR * burst) / 2);
  const boundOf = (pod: string): number => (pod === E ? Math.max(bound, Math.ceil(burst / 2) + DEFAULT_PREFIX_SLACK) : bound);
  t.ok(perEngine.get(E)! >= 2, `prefix affinity still sends the app's sessions to E: ${JSON.stringify([...perEngine])}`);
  for (const [pod, n] of perEngine) t.ok(n <= boundOf(pod), `${pod} took ${n} of the burst's ${burst} sessions (bound ${boundOf(pod)})`);
  t.comment(after?.revision === seen ? "no heartbeat of E came during the burst" : "a heartbeat of E came during the burst (the routers saw part of it there)");
  // Each placement wrote one reservation (conflicts are re-placements, counted apart), and releases add at most one write each.
  const sum = (text: string, re: RegExp): number => [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
  const metrics = await Promise.all(routers.map(async (r) => fetch(`${r.url}/metrics`).then((res) => res.text())));
  const placements = sum(metrics.join("\n"), /^interlace_router_placements_total\{[^}]*\} (\S+)$/gm);
  const reserved = sum(metrics.join("\n"), /^interlace_router_reservation_kv_writes_total\{write="reserve",outcome="written"\} (\S+)$/gm);
  const released = sum(metrics.join("\n"), /^interlace_router_reservation_kv_writes_total\{write="release",outcome="written"\} (\S+)$/gm);
  t.equal(reserved, placements, `one reservation written per placement (${placements} placements)`);
  t.ok(released <= placements, `at most one release each (${released})`);
  // Sessions end with the test (their engines stop); cancel them so teardown is quick.
  await Promise.all(opened.map((s, i) => fetch(`${routers[i % 2]!.url}/v1/apps/default/alpha/sessions/${s.id}`, { method: "DELETE" })));
});

t.test("a router releases a session's reservation on the heartbeat that counts it, not on one published before its admission", async (t) => {
  const reservations = await openReservationsBucket(nc);
  const held = async (): Promise<string[]> => {
    const e = await reservations.get(reservationsKey("default", POOL));
    return e?.operation === "PUT" ? (parseReservations(e.json()) ?? []).map((r) => r.pod) : [];
  };
  t.ok(await eventually(async () => (await held()).length === 0, HEARTBEAT_MS * 3), "the earlier burst's reservations are released");
  for (let attempt = 1; attempt <= 3; attempt++) {
    // Just after a real heartbeat: the next is seconds away.
    const before = (await heartbeat("engine-a"))?.revision ?? 0;
    await eventually(async () => ((await heartbeat("engine-a"))?.revision ?? 0) > before, HEARTBEAT_MS * 2);
    const beats = new Map((await Promise.all(["engine-a", "engine-b"].map((pod) => heartbeat(pod)))).map((h) => [h!.beat.pod, h!.beat]));
    const opened = await openSession(routers[0]!.url, "alpha", longSession());
    const X = opened.engine;
    const predated = beats.get(X)!;
    t.ok(predated.admissions !== undefined, `${X} counts its admissions (${predated.admissions})`);
    // A heartbeat published before the admission, arriving well after the engine took the session (the timing rule would release on it).
    await new Promise((r) => setTimeout(r, 200));
    await heartbeats.put(engineKey(predated.pool, X), JSON.stringify(predated));
    await new Promise((r) => setTimeout(r, 1_000));
    const latest = (await heartbeat(X))!.beat;
    if (latest.admissions !== predated.admissions) {
      t.comment(`attempt ${attempt}: ${X}'s own heartbeat came meanwhile; again`);
      await fetch(`${routers[0]!.url}/v1/apps/default/alpha/sessions/${opened.id}`, { method: "DELETE" });
      t.ok(await eventually(async () => (await held()).length === 0, HEARTBEAT_MS * 3), "released");
      continue;
    }
    t.same(await held(), [X], `the session's reservation on ${X} is kept: that heartbeat (admissions ${predated.admissions}) does not count it`);
    t.ok(await eventually(async () => (await held()).length === 0, HEARTBEAT_MS * 2), `released once ${X}'s next heartbeat counts the session`);
    t.ok(((await heartbeat(X))?.beat.admissions ?? 0) > predated.admissions!, "that heartbeat's counter is past the predated one");
    await fetch(`${routers[0]!.url}/v1/apps/default/alpha/sessions/${opened.id}`, { method: "DELETE" });
    return;
  }
  t.fail("every attempt was overtaken by the engine's own heartbeat");
});

t.test("a reservation counts for every front door until its holder releases it (refused, work over, or a later heartbeat shows it) or its TTL", async (t) => {
  const kv = await openReservationsBucket(nc);
  let clock = 1_000_000;
  const heartbeats = new Map<string, number>([["e1", clock]]);
  let writes = 0;
  const door = (): SharedReservations => {
    const s = new SharedReservations({ kv, ttlMs: 15_000, log, now: () => clock, heartbeatSeenAt: (_ns, _pool, pod) => heartbeats.get(pod), onWrite: () => writes++ });
    void kv.watch({ key: ">" }).then(async (w) => {
      t.teardown(() => w.stop());
      for await (const e of w) s.apply(e);
    });
    return s;
  };
  const [a, b] = [door(), door()];
  const sees = (s: SharedReservations, n: number): Promise<boolean> => eventually(() => s.count("ns", "p", "e1") === n, 5_000);

  const first = await a.exclusive("ns", "p", () => a.reserve("ns", "p", "e1"));
  t.ok(first !== null, "written");
  t.ok(await sees(b, 1), "the other front door counts it");
  const written = writes;
  a.confirm(first!);
  clock += 10;
  heartbeats.set("e1", clock);
  a.heartbeat("ns", "p", "e1", clock);
  t.equal(a.count("ns", "p", "e1"), 1, "a heartbeat right after the engine took it may not count it yet: kept");
  clock += 100;
  heartbeats.set("e1", clock);
  t.equal(b.count("ns", "p", "e1"), 1, "the other front door does not end it on its own reading of a heartbeat (its heartbeat watch may lag)");
  t.equal(writes, written, "the engine taking it writes nothing");
  a.heartbeat("ns", "p", "e1", clock);
  t.equal(a.count("ns", "p", "e1"), 0, "a heartbeat well after it counts the session: its holder stops counting the reservation at once");
  t.ok(await sees(b, 0), "and releases it for every front door");
  t.equal(writes, written + 1, "in one write");

  // The engine answered with its admission count: the heartbeat's counter, not its timing, says whether it shows the session.
  const counted = await a.exclusive("ns", "p", () => a.reserve("ns", "p", "e1"));
  t.ok(await sees(b, 1), "a reservation the engine answers with its admission count");
  a.confirm(counted!, 12);
  clock += 1_000;
  heartbeats.set("e1", clock);
  a.heartbeat("ns", "p", "e1", clock, 11);
  t.equal(a.count("ns", "p", "e1"), 1, "a heartbeat published before the admission (counter 11 < 12) does not show it, however late: kept");
  clock += 1;
  a.heartbeat("ns", "p", "e1", clock, 12);
  t.equal(a.count("ns", "p", "e1"), 0, "the heartbeat whose counter reaches it shows it, however soon: released");
  t.ok(await sees(b, 0), "for every front door");

  const second = await a.exclusive("ns", "p", () => a.reserve("ns", "p", "e1"));
  t.ok(await sees(b, 1), "another reservation, counted by the other front door");
  await a.release(second!);
  t.ok(await sees(b, 0), "released");

  // A front door of an earlier release wrote the engine's acceptance into the reservation and never releases it.
  const key = reservationsKey("ns", "p");
  const current = (await kv.get(key))!;
  await kv.put(key, JSON.stringify({ held: [{ id: "old", holder: "earlier", pod: "e1", confirmed: true }] }), { previousSeq: current.revision });
  t.ok(await sees(b, 1), "an earlier release's confirmed reservation counts");
  clock += 100;
  heartbeats.set("e1", clock);
  t.equal(b.count("ns", "p", "e1"), 0, "until a heartbeat well after its confirmation, as that release expects");

  const third = await b.exclusive("ns", "p", () => b.reserve("ns", "p", "e1"));
  t.ok(third !== null && (await sees(a, 1)), "one by the other front door, counted by the first");
  clock += 15_001;
  t.equal(a.count("ns", "p", "e1"), 0, "never released (its holder died): over after its TTL");

  // Two placements decided on the same view: one is written, the other must place again.
  const raced = await Promise.all([a.reserve("ns", "p", "e1"), b.reserve("ns", "p", "e1")]);
  t.equal(raced.filter((id) => id === null).length, 1, "exactly one of two writes on the same revision loses");
  const again = await (raced[0] === null ? a : b).reserve("ns", "p", "e1");
  t.ok(again !== null, "the loser's copy is refreshed, so its next try is written");
});

t.test("a placement costs two KV writes at most; one heartbeat releases every session it shows in one write", async (t) => {
  const kv = await openReservationsBucket(nc);
  const pool = { namespace: "writes", name: "p" };
  const writes = new Map<ReservationWrite, number>();
  const engines = new EngineRegistry({ ttlMs: 60_000, log });
  const shared = new SharedReservations({ kv, ttlMs: 15_000, log, heartbeatSeenAt: (ns, p, pod) => engines.heartbeatSeenAt(ns, p, pod), onWrite: (w) => writes.set(w, (writes.get(w) ?? 0) + 1) });
  const watch = await kv.watch({ key: reservationsKey(pool.namespace, pool.name) });
  t.teardown(() => watch.stop());
  void (async () => {
    for await (const e of watch) shared.apply(e);
  })();
  engines.shareReservations(shared);
  const beat = (busy: number): void =>
    engines.update({ pod: "e1", endpoint: "http://127.0.0.1:1", pool, model: "m", ready: true, freeSequences: 8 - busy, totalSequences: 8, queuedSessions: 0, activeSessions: busy, kvCellsUsed: 0, kvCellsTotal: 1000, tokensPerSecond: 0, prefixes: [], at: Date.now() });
  beat(0);
  const reserve = async () => (await engines.exclusive(pool.namespace, pool.name, () => engines.reserve(pool.namespace, pool.name, "e1")))!;
  const load = (): number => engines.loads(pool.namespace, pool.name)[0]!.load;
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  const counted = async (fn: () => Promise<void>): Promise<string> => {
    writes.clear();
    await fn();
    await sleep(200);
    return `${writes.get("reserve") ?? 0} reserve, ${writes.get("release") ?? 0} release`;
  };

  t.equal(
    await counted(async () => {
      const r = await reserve();
      r.confirm();
      await r.finish();
    }),
    "1 reserve, 1 release",
    "a completion: its reservation, and its release when answered",
  );
  t.equal(
    await counted(async () => {
      const r = await reserve();
      r.release();
      r.release();
    }),
    "1 reserve, 1 release",
    "a refused placement: its reservation and its release",
  );
  t.equal(
    await counted(async () => {
      for (let i = 0; i < 8; i++) (await reserve()).confirm();
      t.equal(load(), 8, "eight sessions counted");
      await sleep(100);
      beat(8);
      t.equal(load(), 8, "the heartbeat shows them: counted once, not twice");
    }),
    "8 reserve, 1 release",
    "eight sessions: one reservation each, and one release for all when a heartbeat shows them",
  );
  t.equal(
    await counted(async () => {
      const r = await reserve();
      r.confirm();
      r.release();
      t.equal(load(), 9, "a taken session's stream closing is no refusal: still counted");
      await sleep(100);
      beat(9);
      t.equal(load(), 9, "until a heartbeat shows it");
    }),
    "1 reserve, 1 release",
    "a session whose stream closed after the engine took it: released by the heartbeat, not by the close",
  );
});
