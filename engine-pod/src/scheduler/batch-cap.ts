/**
 * @module Which active sessions evaluate in a step when some ask for small
 * batches (Parrot §5.2: a request on a latency-critical path runs in small
 * batches, since every sequence added to a step makes that step slower).
 * A session with `maxBatch` caps the batch of every step it is in; capped
 * sessions never wait for one another (the cap grows to hold them all), and
 * the remaining places go to the others by priority, then admission order.
 * The rest wait a step. With no capped session every active session runs.
 */
import type { SessionView } from "./session-view.js";

/** The sessions of `active` (in admission order) that evaluate in this step. */
export function capBatch(active: readonly SessionView[]): SessionView[] {
  const capped = active.filter((v) => v.maxBatch !== undefined);
  if (capped.length === 0) return [...active];
  const cap = Math.max(capped.length, Math.min(...capped.map((v) => v.maxBatch!)));
  // Stable sort: among equal priorities, admission order.
  const others = active.filter((v) => v.maxBatch === undefined).sort((a, b) => b.priority - a.priority);
  const chosen = new Set([...capped, ...others.slice(0, cap - capped.length)]);
  return active.filter((v) => chosen.has(v));
}
