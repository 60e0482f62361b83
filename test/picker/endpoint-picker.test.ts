/**
 * The endpoint picker's choice over a real EngineRegistry fed heartbeats (no
 * processes): the router's placement turned into `ip:port` endpoints, the
 * subset hint (exact endpoints, a bare IP, nothing eligible: 503 with the
 * reason), shedding when no engine has a free sequence (429 after the wait,
 * or placed at once when a heartbeat frees one meanwhile), the first engine
 * counted as taken while its request is in flight, and pinned engines (410
 * when gone).
 */
import t, { type Test } from "tap";
import { createLogger } from "../../common/src/index.js";
import { parseEngineHeartbeat, type EngineHeartbeat } from "../../common/src/protocol/index.js";
import { engineHeartbeat } from "../helpers/engine-heartbeat.js";
import { EngineRegistry } from "../../router/src/engine-registry.js";
import { HttpError } from "../../router/src/errors.js";
import { EndpointPicker, endpointOf } from "../../router/src/picker/endpoint-picker.js";
import { PickerMetrics } from "../../router/src/picker/metrics.js";

const pool = { namespace: "team", name: "pool" };

function heartbeat(pod: string, endpoint: string, extra: Partial<EngineHeartbeat> = {}): EngineHeartbeat {
  return engineHeartbeat({ pod, endpoint, pool, freeSequences: 2, totalSequences: 2, ...extra });
}

function setup(prefixWaitMs = 0): { engines: EngineRegistry; picker: EndpointPicker } {
  const engines = new EngineRegistry({ ttlMs: 60_000, log: createLogger("test", "silent") });
  engines.update(heartbeat("a", "http://10.0.0.1:8080", { prefixes: ["p1", "p2"] }));
  engines.update(heartbeat("b", "http://10.0.0.2:8080"));
  const picker = new EndpointPicker({ engines, pool, policy: "prefix-affinity", loadFactor: 1.25, prefixSlack: 0, prefixWaitMs, retryAfterSeconds: 2, maxEndpoints: 2, metrics: new PickerMetrics() });
  return { engines, picker };
}

async function refusal(t: Test, p: Promise<unknown>, status: number, pattern: RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof HttpError, `refused: ${String(err)}`);
  t.equal((err as HttpError).status, status);
  t.match((err as HttpError).message, pattern);
}

t.test("endpoints: the router's placement as ip:port, best first", async (t) => {
  t.equal(endpointOf("http://10.0.0.7:8080"), "10.0.0.7:8080");
  t.equal(endpointOf("http://engine.local"), "engine.local:80");
  t.equal(endpointOf("http://[fd00::7]:8080"), "[fd00::7]:8080");
  const { picker } = setup();
  const pick = await picker.place({ chain: ["p1", "p2", "p3"], affinityKey: "k" }, null);
  t.same(pick.pods, ["a", "b"]);
  t.same(pick.endpoints, ["10.0.0.1:8080", "10.0.0.2:8080"], "the fallback list, in placement order");
  t.equal(pick.reason, "prefix");
  t.equal(pick.matched, 2);
  t.equal(picker.podAt("10.0.0.2:8080"), "b");
});

t.test("the subset hint: only allowed endpoints; a bare IP allows its ports; nothing eligible is a 503", async (t) => {
  const { picker } = setup();
  const onlyB = await picker.place({ chain: ["p1", "p2"], affinityKey: "k" }, ["10.0.0.2:8080"]);
  t.same(onlyB.pods, ["b"], "the prefix's engine is not in the subset");
  t.same((await picker.place({ chain: ["p1"], affinityKey: "k" }, ["10.0.0.1"])).pods, ["a"]);
  await refusal(t, picker.place({ chain: [], affinityKey: "k" }, ["10.9.9.9:8080"]), 503, /none of its 2 ready engine\(s\) is in the data plane's subset/);
  await refusal(t, picker.place({ chain: [], affinityKey: "k" }, []), 503, /subset \(empty\)/);
  t.throws(() => picker.pinned("a", ["10.0.0.2:8080"], "session x"), /excludes/);
});

t.test("no free sequence anywhere: shed with 429 after the wait; a heartbeat that frees one places it", async (t) => {
  const { engines, picker } = setup(300);
  engines.update(heartbeat("a", "http://10.0.0.1:8080", { freeSequences: 0, activeSessions: 2 }));
  engines.update(heartbeat("b", "http://10.0.0.2:8080", { freeSequences: 0, activeSessions: 2 }));
  const started = Date.now();
  await refusal(t, picker.place({ chain: [], affinityKey: "k" }, null), 429, /has a free sequence; retry later/);
  t.ok(Date.now() - started >= 250, "waited for a free sequence first");
  const waiting = picker.place({ chain: [], affinityKey: "k" }, null);
  engines.update(heartbeat("b", "http://10.0.0.2:8080", { freeSequences: 1, activeSessions: 1 }));
  t.same((await waiting).pods[0], "b", "placed on the engine whose heartbeat freed a sequence");
});

t.test("a full engine that advertises a sequence a paused session would give up is placed on at once", async (t) => {
  const { engines, picker } = setup(60_000);
  engines.update(heartbeat("a", "http://10.0.0.1:8080", { freeSequences: 0, activeSessions: 2, reclaimableSequences: 1 }));
  engines.update(heartbeat("b", "http://10.0.0.2:8080", { freeSequences: 0, activeSessions: 2 }));
  t.same(engines.loads(pool.namespace, pool.name).map((e) => [e.pod, e.free, e.load]), [["a", 1, 2], ["b", 0, 2]], "counted as free, still as load");
  const started = Date.now();
  t.same((await picker.place({ chain: [], affinityKey: "k" }, null)).pods[0], "a");
  t.ok(Date.now() - started < 5_000, "no wait for a heartbeat that frees one");
  t.notOk(parseEngineHeartbeat({ ...heartbeat("c", "http://10.0.0.3:8080"), reclaimableSequences: -1 }).ok, "a negative count is refused");
  t.notOk(parseEngineHeartbeat({ ...heartbeat("c", "http://10.0.0.3:8080"), draining: "yes" }).ok, "a draining flag that is not a boolean is refused");
});

t.test("the first engine counts as taken while its request is in flight", async (t) => {
  const { engines, picker } = setup();
  const first = await picker.place({ chain: [], affinityKey: "k" }, null);
  const load = (pod: string): number => engines.loads(pool.namespace, pool.name).find((e) => e.pod === pod)!.load;
  t.equal(load(first.pods[0]!), 1, "reserved");
  first.reservation.release();
  t.equal(load(first.pods[0]!), 0, "released when the engine refused or the stream broke");
  const second = await picker.place({ chain: [], affinityKey: "k" }, null);
  second.reservation.confirm();
  t.equal(load(second.pods[0]!), 1, "confirmed: counted until a heartbeat shows it");
});

t.test("pinned: a session's own engine, 410 when it is gone", async (t) => {
  const { picker } = setup();
  t.same(picker.pinned("b", null, "session x").endpoints, ["10.0.0.2:8080"]);
  t.throws(() => picker.pinned("gone", null, 'session "gone.1"'), /session "gone.1" ran on engine gone, which is gone/);
  try {
    picker.pinned("gone", null, "x");
  } catch (err) {
    t.equal((err as HttpError).status, 410);
  }
});
