/**
 * @module Retention under pressure, as a pure function: a request needs a
 * sequence slot, every slot is held, and some of the holders are paused
 * sessions keeping their cells while a tool runs. Which one, if any, gives its
 * cells up (swap or recompute, the cheaper by the cost model), so the request
 * is admitted now instead of refused?
 *
 * Five policies, behind one flag so they compare on one engine:
 * - `eta` (Interlace): the paused session expected to wait longest yields
 *   first, and only one whose restore fits in its expected wait: a session
 *   whose tool is about to answer keeps its cells. Its wait comes from the
 *   pending calls' latency estimates (the tool's, or the request's hint).
 * - `ttl` (Continuum): a paused session is pinned for a TTL after its pause
 *   (the request's `retentionSeconds` hint, else the engine's TTL); past it,
 *   the longest-paused yields first.
 * - `lru`: the least recently active paused session yields first.
 * - `pin`: a paused session keeps its cells until its result arrives; the
 *   request is refused meanwhile.
 * - `discard`: nothing is held across a tool wait (the trap drops the cells
 *   and the resume re-prefills them): the sync behaviour, as a baseline.
 */
import { KV_RETENTION_POLICIES, type KvRetentionPolicy, type TrapDecision } from "../../../common/src/index.js";

export const RETENTION_POLICIES = KV_RETENTION_POLICIES;
export type RetentionPolicy = KvRetentionPolicy;

/** A paused session holding its cells (kept at its trap). */
export interface RetentionCandidate {
  readonly id: string;
  /** When it paused, epoch ms (its last activity). */
  readonly pausedAt: number;
  /** Expected time until its next interrupt, ms (`Infinity`: no call pending). */
  readonly expectedWaitMs: number;
  /** Time to give the cells up and get them back, by each way, ms (the cost model's). */
  readonly swapMs: number;
  readonly recomputeMs: number;
  /** The request's retention hint, ms; replaces the engine's TTL under `ttl`. */
  readonly retentionMs?: number;
}

export interface RetentionOptions {
  /** `ttl`: how long a paused session is pinned when its request gives no hint, ms. */
  readonly ttlMs: number;
  /** `eta`: the share of the expected wait a restore may take (estimates err). Default 0.8. */
  readonly hideFraction?: number;
}

export interface Eviction {
  readonly id: string;
  /** How the cells are given up: swap or recompute, whichever the cost model says is cheaper. */
  readonly decision: Exclude<TrapDecision, "keep">;
  readonly reason: "longest_wait" | "ttl_expired" | "least_recent";
}

/**
 * What a trap does under the policy before any pressure: `discard` drops the
 * cells at once; the others keep them (eta's trap-time rule, `decideTrap`,
 * still swaps or recomputes when memory is already scarce).
 */
export function trapRule(policy: RetentionPolicy): "auto" | "keep" | "recompute" {
  return policy === "discard" ? "recompute" : policy === "eta" ? "auto" : "keep";
}

/** The paused sessions the policy would let give their cells up now (pin and discard: none). */
export function evictable(policy: RetentionPolicy, candidates: readonly RetentionCandidate[], now: number, options: RetentionOptions): RetentionCandidate[] {
  switch (policy) {
    case "pin":
    case "discard":
      return [];
    case "lru":
      return [...candidates];
    case "ttl":
      return candidates.filter((x) => now - x.pausedAt >= (x.retentionMs ?? options.ttlMs));
    case "eta": {
      const f = options.hideFraction ?? 0.8;
      // Only a session whose restore hides in its wait: evicting one about to resume costs its restore on the critical path.
      return candidates.filter((x) => Math.min(x.swapMs, x.recomputeMs) <= f * x.expectedWaitMs);
    }
  }
}

/** The paused session that yields its cells to a waiting request, or null (the request is refused). */
export function chooseEviction(policy: RetentionPolicy, candidates: readonly RetentionCandidate[], now: number, options: RetentionOptions): Eviction | null {
  const list = evictable(policy, candidates, now, options);
  // eta: the longest expected wait first; the others: the longest-paused (least recently active) first.
  const c = [...list].sort((a, b) => (policy === "eta" ? b.expectedWaitMs - a.expectedWaitMs : 0) || a.pausedAt - b.pausedAt || cmp(a.id, b.id))[0];
  if (c === undefined) return null;
  const reason: Eviction["reason"] = policy === "eta" ? "longest_wait" : policy === "ttl" ? "ttl_expired" : "least_recent";
  return { id: c.id, decision: c.swapMs <= c.recomputeMs ? "swap" : "recompute", reason };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
