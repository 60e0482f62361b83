/**
 * A router without shared reservations (no reservations bucket: the
 * registry alone, router/src/engine-registry.ts) counts its own placements
 * against their engine until a heartbeat counts them, by the same rule as
 * the shared reservations (heartbeatShows): the engine's admission counter
 * when the heartbeat and the answer both carry one, else a heartbeat
 * arriving more than REFLECTED_AFTER_MS after the engine took the request.
 */
import t from "tap";
import type { EngineHeartbeat } from "../../common/src/protocol/index.js";
import { EngineRegistry } from "../../router/src/engine-registry.js";
import { REFLECTED_AFTER_MS } from "../../router/src/shared-reservations.js";
import { log } from "./fixtures.js";

const pool = { namespace: "ns", name: "p" };

function setup(): { engines: EngineRegistry; tick(ms: number): void; beat(busy: number, admissions?: number): void; load(): number; free(): number } {
  let clock = 1_000_000;
  const engines = new EngineRegistry({ ttlMs: 60_000, log, now: () => clock });
  const beat = (busy: number, admissions?: number): void => {
    const heartbeat: EngineHeartbeat = {
      pod: "e1",
      endpoint: "http://127.0.0.1:1",
      pool,
      model: "m",
      ready: true,
      freeSequences: 4 - busy,
      totalSequences: 4,
      queuedSessions: 0,
      activeSessions: busy,
      kvCellsUsed: 0,
      kvCellsTotal: 1000,
      tokensPerSecond: 0,
      prefixes: [],
      at: clock,
      ...(admissions !== undefined ? { admissions } : {}),
    };
    engines.update(heartbeat);
  };
  const only = () => engines.loads(pool.namespace, pool.name)[0]!;
  return { engines, tick: (ms) => void (clock += ms), beat, load: () => only().load, free: () => only().free };
}

async function place(engines: EngineRegistry): Promise<NonNullable<Awaited<ReturnType<EngineRegistry["reserve"]>>>> {
  return (await engines.exclusive(pool.namespace, pool.name, () => engines.reserve(pool.namespace, pool.name, "e1")))!;
}

t.test("an engine that counts its admissions: the heartbeat whose counter reaches the answer's releases the placement, whenever it arrives", async (t) => {
  const { engines, tick, beat, load, free } = setup();
  beat(0, 6);
  (await place(engines)).confirm(7);
  t.equal(load(), 1, "the taken session counts before any heartbeat shows it");
  tick(10 * REFLECTED_AFTER_MS);
  beat(0, 6);
  t.equal(load(), 1, "a heartbeat published before the admission (counter 6 < 7), arriving late: still counted");
  t.equal(free(), 3, "and its sequence is not offered to another session");
  tick(1);
  beat(1, 7);
  t.equal(load(), 1, "the heartbeat that counts it (counter 7), arriving at once: counted once, by the heartbeat, not twice");
  t.equal(free(), 3, "one sequence taken, not two");
  tick(1);
  beat(0, 7);
  t.equal(load(), 0, "once that session ended, nothing of it is left counted");

  (await place(engines)).confirm(8);
  tick(1);
  beat(1, 8);
  t.equal(load(), 1, "the next session's counting heartbeat 1 ms after the answer: counted once at once, not twice for 50 ms");
  t.equal(free(), 3, "and its engine offers its other three sequences");
});

t.test("an answer without a count, or an engine without a counter: released by a heartbeat arriving well after", async (t) => {
  const { engines, tick, beat, load } = setup();
  beat(0);
  (await place(engines)).confirm();
  tick(REFLECTED_AFTER_MS);
  beat(0);
  t.equal(load(), 1, "right after: still counted");
  tick(1);
  beat(1);
  t.equal(load(), 1, "well after: the heartbeat's figures count it, once");

  const second = setup();
  second.beat(0, 3);
  (await place(second.engines)).confirm();
  second.tick(REFLECTED_AFTER_MS + 1);
  second.beat(1, 4);
  t.equal(second.load(), 1, "an answer that named no count, on a counting engine: by timing");
});

t.test("a placement refused or finished stops counting at once", async (t) => {
  const { engines, beat, load } = setup();
  beat(0, 0);
  const refused = await place(engines);
  t.equal(load(), 1, "counted while it is sent");
  refused.release();
  t.equal(load(), 0, "refused: released");
  const done = await place(engines);
  done.confirm(1);
  await done.finish();
  t.equal(load(), 0, "its work over before any heartbeat: released");
});
