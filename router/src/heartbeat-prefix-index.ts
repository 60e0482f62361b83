/**
 * @module The `heartbeat` prefix index: each engine's blocks are the hashes
 * its last heartbeat listed (up to one heartbeat interval old).
 */
import type { EngineHeartbeat } from "../../common/src/protocol/index.js";
import { NO_BLOCKS, snapshotBlocks, type EngineBlocks, type PrefixIndex } from "./prefix-index.js";

export class HeartbeatPrefixIndex implements PrefixIndex {
  readonly kind = "heartbeat";
  /** pool key → pod → blocks. */
  private readonly engines = new Map<string, Map<string, EngineBlocks>>();

  heartbeat(pool: string, heartbeat: EngineHeartbeat): void {
    let pods = this.engines.get(pool);
    if (pods === undefined) this.engines.set(pool, (pods = new Map()));
    pods.set(heartbeat.pod, snapshotBlocks(new Set(heartbeat.prefixes), new Set(heartbeat.fillingPrefixes ?? [])));
  }

  forget(pool: string, pod: string): void {
    this.engines.get(pool)?.delete(pod);
  }

  blocks(pool: string, pod: string): EngineBlocks {
    return this.engines.get(pool)?.get(pod) ?? NO_BLOCKS;
  }
}
