/**
 * The prefix indexes as data structures: the events index keeps a per-block
 * index current from numbered KV events, answers the longest run of leading
 * blocks per engine, falls back to the heartbeat on a gap, a new engine or a
 * new epoch, and resyncs from the next heartbeat (replaying the events that
 * arrived after it); the heartbeat index answers from snapshots only. The
 * engine's side: the event that turns one published state into the next.
 */
import t from "tap";
import { createLogger, prefixHashChain } from "../../common/src/index.js";
import { parseEngineHeartbeat, validateKvEvent, type EngineHeartbeat, type KvEvent } from "../../common/src/protocol/index.js";
import { EventPrefixIndex } from "../../router/src/event-prefix-index.js";
import { HeartbeatPrefixIndex } from "../../router/src/heartbeat-prefix-index.js";
import { kvEventsPool } from "../../router/src/kv-event-watch.js";
import { kvEventDiff } from "../../engine-pod/src/heartbeat/index.js";
import { engineHeartbeat } from "../helpers/engine-heartbeat.js";
import { kvEventsSubject } from "../../common/src/protocol/index.js";

const log = createLogger("test", "silent");
const POOL = "default/pool";
const chainA = prefixHashChain({ messages: [{ role: "system", content: "app A" }, { role: "user", content: "one" }, { role: "assistant", content: "ok" }, { role: "user", content: "two" }] });
const chainB = prefixHashChain({ messages: [{ role: "system", content: "app B" }, { role: "user", content: "one" }] });

function heartbeat(pod: string, prefixes: string[], kvEvents?: { epoch: string; seq: number }, filling: string[] = []): EngineHeartbeat {
  return engineHeartbeat({
    pod,
    kvCellsTotal: 1,
    prefixes,
    ...(filling.length > 0 ? { fillingPrefixes: filling } : {}),
    ...(kvEvents !== undefined ? { kvEvents } : {}),
  });
}

const ev = (pod: string, seq: number, change: Partial<KvEvent>, epoch = "e1"): KvEvent => ({ pod, epoch, seq, ...change });

t.test("events keep the per-block index current: the longest run of leading blocks per engine", async (t) => {
  const index = new EventPrefixIndex(log);
  index.heartbeat(POOL, heartbeat("a", [], { epoch: "e1", seq: 0 }));
  index.heartbeat(POOL, heartbeat("b", [], { epoch: "e1", seq: 0 }));
  t.equal(index.source(POOL, "a"), "events");
  index.apply(POOL, ev("a", 1, { stored: chainA.slice(0, 2) }));
  index.apply(POOL, ev("b", 1, { filling: chainA }));
  t.same(index.blocks(POOL, "a").leading(chainA), { matched: 2, filled: 2 });
  t.same(index.blocks(POOL, "b").leading(chainA), { matched: 3, filled: 0 }, "filling blocks match but are not in cells yet");
  index.apply(POOL, ev("b", 2, { stored: chainA }));
  t.same(index.blocks(POOL, "b").leading(chainA), { matched: 3, filled: 3 }, "the fill completed");
  // The run stops at the first block an engine lacks.
  t.same(index.blocks(POOL, "a").leading([chainA[0]!, "other", chainA[2]!]), { matched: 1, filled: 1 });
  index.apply(POOL, ev("a", 2, { removed: chainA.slice(0, 2), stored: chainB }));
  t.same(index.blocks(POOL, "a").leading(chainA), { matched: 0, filled: 0 }, "an eviction is seen at once");
  t.same(index.blocks(POOL, "a").leading(chainB), { matched: 2, filled: 2 });
  index.apply(POOL, ev("a", 2, { stored: chainA }));
  t.same(index.blocks(POOL, "a").leading(chainA), { matched: 0, filled: 0 }, "a repeated event number is ignored");
  index.forget(POOL, "b");
  t.same(index.blocks(POOL, "b").leading(chainA), { matched: 0, filled: 0 }, "a forgotten engine holds nothing");
});

t.test("a gap falls back to the heartbeat until the next heartbeat resyncs, replaying later events", async (t) => {
  const index = new EventPrefixIndex(log);
  index.heartbeat(POOL, heartbeat("a", chainB, { epoch: "e1", seq: 4 }));
  t.same(index.blocks(POOL, "a").leading(chainB), { matched: 2, filled: 2 }, "synced from the heartbeat");
  index.apply(POOL, ev("a", 5, { removed: chainB }));
  t.equal(index.blocks(POOL, "a").leading(chainB).matched, 0);
  // Event 6 is lost: 7 reveals the gap.
  index.apply(POOL, ev("a", 7, { stored: chainA }));
  t.equal(index.source(POOL, "a"), "heartbeat", "out of sync after the gap");
  t.same(index.blocks(POOL, "a").leading(chainB), { matched: 2, filled: 2 }, "answered from the last heartbeat meanwhile (stale, as the heartbeat index would be)");
  t.equal(index.blocks(POOL, "a").leading(chainA).matched, 0, "the event after the gap is not applied on its own");
  // The next heartbeat reflects event 6; event 7, which arrived before it, is replayed on top.
  index.heartbeat(POOL, heartbeat("a", [chainA[0]!], { epoch: "e1", seq: 6 }));
  t.equal(index.source(POOL, "a"), "events", "back in sync");
  t.same(index.blocks(POOL, "a").leading(chainA), { matched: 3, filled: 3 }, "event 7 replayed after the resync");
  t.equal(index.blocks(POOL, "a").leading(chainB).matched, 0);
  index.apply(POOL, ev("a", 8, { removed: chainA.slice(1) }));
  t.same(index.blocks(POOL, "a").leading(chainA), { matched: 1, filled: 1 }, "events apply again");
  // Events past a hole in what arrived meanwhile are not replayed: the index stays at the run's end.
  index.apply(POOL, ev("a", 10, { stored: chainA })); // 9 lost
  index.apply(POOL, ev("a", 12, { stored: chainB })); // 11 lost
  t.equal(index.source(POOL, "a"), "heartbeat");
  index.heartbeat(POOL, heartbeat("a", [chainA[0]!], { epoch: "e1", seq: 9 }));
  t.same(index.blocks(POOL, "a").leading(chainA), { matched: 3, filled: 3 }, "event 10 replayed");
  t.equal(index.blocks(POOL, "a").leading(chainB).matched, 0, "event 12, past the hole, is not");
  index.apply(POOL, ev("a", 13, {}));
  t.equal(index.source(POOL, "a"), "heartbeat", "the next event shows the index missed one");
});

t.test("a new engine, a restart under a new epoch, and an engine without events are answered from heartbeats", async (t) => {
  const index = new EventPrefixIndex(log);
  index.apply(POOL, ev("a", 9, { stored: chainA }));
  t.equal(index.source(POOL, "a"), "heartbeat", "events before any heartbeat: not in sync");
  t.equal(index.blocks(POOL, "a").leading(chainA).matched, 0);
  index.heartbeat(POOL, heartbeat("a", [], { epoch: "e1", seq: 8 }));
  t.equal(index.blocks(POOL, "a").leading(chainA).matched, 3, "synced at 8, event 9 replayed");
  // A heartbeat older than the events already applied changes nothing.
  index.heartbeat(POOL, heartbeat("a", [], { epoch: "e1", seq: 9 }));
  t.equal(index.blocks(POOL, "a").leading(chainA).matched, 3);
  index.apply(POOL, ev("a", 1, { stored: chainB }, "e2"));
  t.equal(index.source(POOL, "a"), "heartbeat", "a new epoch: the engine restarted");
  index.heartbeat(POOL, heartbeat("a", [], { epoch: "e2", seq: 0 }));
  t.same(index.blocks(POOL, "a").leading(chainB), { matched: 2, filled: 2 });
  t.equal(index.blocks(POOL, "a").leading(chainA).matched, 0, "the old incarnation's blocks are gone");
  index.heartbeat(POOL, heartbeat("c", chainA));
  t.equal(index.source(POOL, "c"), "heartbeat", "no kvEvents in its heartbeats: never in sync");
  t.same(index.blocks(POOL, "c").leading(chainA), { matched: 3, filled: 3 });
});

t.test("the heartbeat index answers from the last snapshot only", async (t) => {
  const index = new HeartbeatPrefixIndex();
  index.heartbeat(POOL, heartbeat("a", chainA, undefined, [chainA[2]!]));
  t.same(index.blocks(POOL, "a").leading(chainA), { matched: 3, filled: 2 });
  t.same(index.blocks(POOL, "b").leading(chainA), { matched: 0, filled: 0 });
  index.forget(POOL, "a");
  t.equal(index.blocks(POOL, "a").leading(chainA).matched, 0);
});

t.test("the engine publishes the difference from what it last published", async (t) => {
  const first = kvEventDiff(new Map(), { hashes: chainA, filling: [chainA[2]!] });
  t.same(first, { stored: chainA.slice(0, 2), filling: [chainA[2]!] });
  const before = new Map(chainA.map((h, i) => [h, i === 2]));
  t.equal(kvEventDiff(before, { hashes: chainA, filling: [chainA[2]!] }), null, "no change, no event");
  t.same(kvEventDiff(before, { hashes: chainA, filling: [] }), { stored: [chainA[2]!] }, "a fill completed");
  t.same(kvEventDiff(before, { hashes: chainB, filling: [] }), { stored: chainB, removed: chainA });
});

t.test("KV events are validated and their subject names the pool", async (t) => {
  t.ok(validateKvEvent({ pod: "a", epoch: "e1", seq: 1, stored: ["x"] }).ok);
  const bad = validateKvEvent({ pod: "a", epoch: "e1", seq: 0 });
  t.notOk(bad.ok);
  t.match(bad.ok ? "" : bad.error, /seq/);
  t.notOk(validateKvEvent({ pod: "a", epoch: "e1", seq: 1, extra: true }).ok);
  t.equal(kvEventsPool(kvEventsSubject({ namespace: "team-a", name: "gpu.pool" })), "team-a/gpu.pool");
  t.equal(kvEventsPool("interlace.tools.a.b"), null);
  t.ok(parseEngineHeartbeat(heartbeat("a", [], { epoch: "e1", seq: 0 })).ok, "a heartbeat's KV event position");
  const badPosition = parseEngineHeartbeat({ ...heartbeat("a", []), kvEvents: { epoch: "e1", seq: -1 } });
  t.match(badPosition.ok ? "" : badPosition.reason, /kvEvents/);
});
