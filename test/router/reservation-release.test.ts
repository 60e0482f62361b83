/**
 * When a router releases a placement reservation (router/src/shared-reservations.ts):
 * on the first heartbeat of its engine that counts the session. With the
 * engine's admission counter, that is a heartbeat whose counter reached the
 * count the engine answered the request with, whenever it arrives; without
 * one (an older engine, or an answer without the count), a heartbeat
 * arriving more than REFLECTED_AFTER_MS after the engine took the request.
 */
import t from "tap";
import { heartbeatShows, REFLECTED_AFTER_MS } from "../../router/src/shared-reservations.js";

const at = 1_000_000;

t.test("a heartbeat published before the admission does not show it, however late it arrives", async (t) => {
  t.notOk(heartbeatShows({ at, admission: 7 }, { seenAt: at + 10 * REFLECTED_AFTER_MS, admissions: 6 }), "counter one short, long after: kept");
  t.notOk(heartbeatShows({ at, admission: 7 }, { seenAt: at + 60_000, admissions: 0 }), "counter far behind: kept");
});

t.test("a heartbeat at or after the admission shows it, however soon it arrives", async (t) => {
  t.ok(heartbeatShows({ at, admission: 7 }, { seenAt: at + 1, admissions: 7 }), "the admission's own count, at once: released");
  t.ok(heartbeatShows({ at, admission: 7 }, { seenAt: at, admissions: 9 }), "later admissions counted too: released");
});

t.test("without a counter on either side, the timing rule", async (t) => {
  t.notOk(heartbeatShows({ at }, { seenAt: at + REFLECTED_AFTER_MS }), "an engine without a counter, right after: kept");
  t.ok(heartbeatShows({ at }, { seenAt: at + REFLECTED_AFTER_MS + 1 }), "an engine without a counter, well after: released");
  t.notOk(heartbeatShows({ at }, { seenAt: at + 10, admissions: 50 }), "an answer that named no count, right after: kept");
  t.ok(heartbeatShows({ at }, { seenAt: at + REFLECTED_AFTER_MS + 1, admissions: 0 }), "and well after: released");
  t.notOk(heartbeatShows({ at, admission: 3 }, { seenAt: at + 10 }), "a count, but a heartbeat without one (an engine rolled back), right after: kept");
  t.ok(heartbeatShows({ at, admission: 3 }, { seenAt: at + REFLECTED_AFTER_MS + 1 }), "and well after: released");
});
