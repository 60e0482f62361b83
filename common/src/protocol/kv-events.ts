/**
 * @module Engine KV events: each engine pod publishes, on its pool's subject
 * `interlace.kvevents.<namespace>.<pool>`, the prefix blocks it has just
 * stored and evicted — a block being one entry of a prompt's prefix-hash
 * chain (common/prefix-hash), the unit the router hashes prompts into, so a
 * prompt's blocks can be looked up as they are. Core NATS (no stream): a
 * router that misses an event sees a gap in the engine's `seq` and falls
 * back to that engine's heartbeat, whose `kvEvents` names the event its
 * prefixes reflect, until that heartbeat resyncs it.
 */
import type { JsonSchema } from "../tools.js";
import { encodeToken, type PoolRef } from "./subjects.js";

export const KV_EVENTS_PREFIX = "interlace.kvevents";

/** One engine's change to the blocks it holds. */
export interface KvEvent {
  pod: string;
  /** The publisher's incarnation: a restarted engine counts `seq` from 1 again under a new epoch. */
  epoch: string;
  /** 1, 2, … per epoch, no gaps: a router that sees one skipped missed an event. */
  seq: number;
  /** Blocks now in KV cells (a sequence's prompt filled, a prefix-store entry, or a fill that completed). */
  stored?: string[];
  /** Blocks a live session is prefilling now (a session sent there waits for the fill, then forks it). */
  filling?: string[];
  /** Blocks no sequence or prefix-store entry holds any more. */
  removed?: string[];
}

/** Where a heartbeat's prefixes stand in its engine's event stream. */
export interface KvEventPosition {
  epoch: string;
  /** The last event published before the heartbeat's prefixes were read (0: none yet). */
  seq: number;
}

/** `interlace.kvevents.<ns>.<pool>` */
export function kvEventsSubject(pool: PoolRef): string {
  return `${KV_EVENTS_PREFIX}.${encodeToken(pool.namespace)}.${encodeToken(pool.name)}`;
}

/** Every pool's KV events (a router places on all pools). */
export const ALL_KV_EVENTS = `${KV_EVENTS_PREFIX}.>`;

const HASHES = { type: "array", items: { type: "string", minLength: 1, maxLength: 128 } } as const;

export const kvEventSchema: JsonSchema = {
  type: "object",
  properties: {
    pod: { type: "string", minLength: 1, maxLength: 253 },
    epoch: { type: "string", minLength: 1, maxLength: 64 },
    seq: { type: "integer", minimum: 1 },
    stored: HASHES,
    filling: HASHES,
    removed: HASHES,
  },
  required: ["pod", "epoch", "seq"],
  additionalProperties: false,
};
