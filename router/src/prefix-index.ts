/**
 * @module What placement asks about prefixes: for one engine, how many
 * leading blocks of a prompt's prefix-hash chain (common/prefix-hash) it
 * holds. Two indexes answer it, picked by `--prefix-index`:
 *
 * - `heartbeat` ({@link HeartbeatPrefixIndex}): each engine's last
 *   heartbeat snapshot, up to one heartbeat interval old.
 * - `events` ({@link EventPrefixIndex}): a per-block index (block → engines)
 *   kept current from the engines' KV events, falling back to an engine's
 *   heartbeat while its events are not in sync (a new engine, a missed event).
 *
 * The engine registry tells the index about heartbeats and engines leaving;
 * placement reads {@link EngineBlocks} and nothing else.
 */
import { residentPrefixLength } from "../../common/src/index.js";
import type { EngineHeartbeat } from "../../common/src/protocol/index.js";

export const PREFIX_INDEXES = ["heartbeat", "events"] as const;
export type PrefixIndexKind = (typeof PREFIX_INDEXES)[number];

/** How much of a chain one engine holds. */
export interface LeadingBlocks {
  /** Leading blocks held, in KV cells or being prefilled there. */
  matched: number;
  /** Of those, the leading ones already in cells (a session sent there need not wait for a fill). */
  filled: number;
}

/** One engine's blocks, as placement sees them. */
export interface EngineBlocks {
  leading(chain: readonly string[]): LeadingBlocks;
}

export interface PrefixIndex {
  readonly kind: PrefixIndexKind;
  /** An engine's heartbeat arrived (pool key `namespace/name`). */
  heartbeat(pool: string, heartbeat: EngineHeartbeat): void;
  /** The engine left placement. */
  forget(pool: string, pod: string): void;
  /** The engine's blocks now. */
  blocks(pool: string, pod: string): EngineBlocks;
}

/** Blocks as a heartbeat lists them: every hash held, and those still being filled. */
export function snapshotBlocks(held: ReadonlySet<string>, filling: ReadonlySet<string>): EngineBlocks {
  return {
    leading: (chain) => ({
      matched: residentPrefixLength(chain, held),
      filled: residentPrefixLength(chain, { has: (h) => held.has(h) && !filling.has(h) }),
    }),
  };
}

export const NO_BLOCKS: EngineBlocks = { leading: () => ({ matched: 0, filled: 0 }) };

/** An engine's blocks plus hashes the router knows it holds from elsewhere (program prefixes it had filled there). */
export function withKnownBlocks(blocks: EngineBlocks, known: ReadonlySet<string>): EngineBlocks {
  if (known.size === 0) return blocks;
  return {
    leading: (chain) => {
      const own = blocks.leading(chain);
      const extra = residentPrefixLength(chain, known);
      return { matched: Math.max(own.matched, extra), filled: Math.max(own.filled, extra) };
    },
  };
}
