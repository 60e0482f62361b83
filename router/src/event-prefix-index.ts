/**
 * @module The `events` prefix index: a per-block index (block hash →
 * engines holding it, and whether each is still filling it) kept current
 * from the engines' KV events (protocol/kv-events), so placement sees an
 * eviction or a new prefix within milliseconds instead of at the next
 * heartbeat.
 *
 * Each engine's events are numbered. The index applies them in order while
 * it is in sync with the engine; an engine it has not synced yet (new to
 * this router, restarted under a new epoch) or whose events skipped a
 * number (one was missed: core NATS does not redeliver) is answered from
 * its last heartbeat instead, until a heartbeat resyncs it: the heartbeat's
 * prefixes are the engine's state as of its event `kvEvents.seq`, and the
 * events continuing from it that arrived meanwhile are replayed on top. An engine that
 * publishes no events (no `kvEvents` in its heartbeat) stays on its heartbeat.
 */
import type { Logger } from "../../common/src/index.js";
import type { EngineHeartbeat, KvEvent } from "../../common/src/protocol/index.js";
import { NO_BLOCKS, snapshotBlocks, type EngineBlocks, type LeadingBlocks, type PrefixIndex } from "./prefix-index.js";

/** Events kept per out-of-sync engine for replay after its resync (beyond, the oldest go: a later heartbeat covers them). */
const MAX_PENDING = 256;

interface EngineEvents {
  /** Applying events (else the heartbeat answers). */
  synced: boolean;
  epoch: string | undefined;
  /** Last event applied (or that the resyncing heartbeat reflected). */
  seq: number;
  /** Blocks this engine holds in the index: block → still filling. */
  held: Map<string, boolean>;
  /** The last heartbeat's blocks (the fallback). */
  heartbeat: EngineBlocks;
  /** Events received while out of sync, for replay. */
  pending: KvEvent[];
}

/** Where an engine's blocks come from now (tests and logs). */
export type BlockSource = "events" | "heartbeat";

export class EventPrefixIndex implements PrefixIndex {
  readonly kind = "events";
  /** block → engine key → still filling. */
  private readonly blocksIndex = new Map<string, Map<string, boolean>>();
  /** engine key (`pool` NUL `pod`) → its event state. */
  private readonly engines = new Map<string, EngineEvents>();

  constructor(private readonly log: Logger) {}

  /** Applies one KV event of pool `pool` (key `namespace/name`). */
  apply(pool: string, event: KvEvent): void {
    const key = engineKey(pool, event.pod);
    const e = this.state(key);
    if (e.synced && event.epoch === e.epoch) {
      if (event.seq <= e.seq) return; // already in the index (replayed, or reflected by the resyncing heartbeat)
      if (event.seq === e.seq + 1) return this.change(key, e, event);
      this.desync(key, e, `missed KV events ${e.seq + 1}..${event.seq - 1}`, { pool, pod: event.pod });
    } else if (e.synced) {
      this.desync(key, e, `new epoch ${event.epoch} (engine restarted)`, { pool, pod: event.pod });
    }
    e.pending.push(event);
    if (e.pending.length > MAX_PENDING) e.pending.shift();
  }

  heartbeat(pool: string, heartbeat: EngineHeartbeat): void {
    const key = engineKey(pool, heartbeat.pod);
    const e = this.state(key);
    const filling = new Set(heartbeat.fillingPrefixes ?? []);
    e.heartbeat = snapshotBlocks(new Set(heartbeat.prefixes), filling);
    const position = heartbeat.kvEvents;
    if (position === undefined) {
      if (e.synced) this.desync(key, e, "its heartbeat carries no KV event position", { pool, pod: heartbeat.pod });
      return;
    }
    // In sync and at least as current as the heartbeat (events outrun the KV bucket): nothing to learn.
    if (e.synced && e.epoch === position.epoch && e.seq >= position.seq) return;
    this.clear(key, e);
    for (const h of heartbeat.prefixes) this.hold(key, e, h, filling.has(h));
    const wasSynced = e.synced;
    e.synced = true;
    e.epoch = position.epoch;
    e.seq = position.seq;
    // Replay the run that continues the heartbeat; anything past a hole is dropped (a later event or heartbeat reveals it).
    const later = e.pending.filter((p) => p.epoch === position.epoch && p.seq > position.seq).sort((a, b) => a.seq - b.seq);
    e.pending = [];
    for (const p of later) if (p.seq === e.seq + 1) this.change(key, e, p);
    if (!wasSynced) this.log.info({ pool, pod: heartbeat.pod, seq: e.seq }, "KV events in sync (heartbeat resync)");
  }

  forget(pool: string, pod: string): void {
    const key = engineKey(pool, pod);
    const e = this.engines.get(key);
    if (e === undefined) return;
    this.clear(key, e);
    this.engines.delete(key);
  }

  blocks(pool: string, pod: string): EngineBlocks {
    const key = engineKey(pool, pod);
    const e = this.engines.get(key);
    if (e === undefined) return NO_BLOCKS;
    if (!e.synced) return e.heartbeat;
    return { leading: (chain) => this.leading(key, chain) };
  }

  /** Where an engine's blocks come from now (undefined: unknown engine). */
  source(pool: string, pod: string): BlockSource | undefined {
    const e = this.engines.get(engineKey(pool, pod));
    return e === undefined ? undefined : e.synced ? "events" : "heartbeat";
  }

  /** The longest run of leading blocks of `chain` the engine holds, walked block by block through the index. */
  private leading(key: string, chain: readonly string[]): LeadingBlocks {
    let matched = 0;
    let filled = 0;
    for (const block of chain) {
      const filling = this.blocksIndex.get(block)?.get(key);
      if (filling === undefined) break;
      if (!filling && filled === matched) filled++;
      matched++;
    }
    return { matched, filled };
  }

  private state(key: string): EngineEvents {
    let e = this.engines.get(key);
    if (e === undefined) this.engines.set(key, (e = { synced: false, epoch: undefined, seq: 0, held: new Map(), heartbeat: NO_BLOCKS, pending: [] }));
    return e;
  }

  private change(key: string, e: EngineEvents, event: KvEvent): void {
    for (const h of event.removed ?? []) this.release(key, e, h);
    for (const h of event.stored ?? []) this.hold(key, e, h, false);
    for (const h of event.filling ?? []) this.hold(key, e, h, true);
    e.seq = event.seq;
  }

  private desync(key: string, e: EngineEvents, reason: string, engine: { pool: string; pod: string }): void {
    this.log.info({ ...engine, reason }, "KV events out of sync: placing from the engine's heartbeat until the next one");
    this.clear(key, e);
    e.synced = false;
  }

  private hold(key: string, e: EngineEvents, block: string, filling: boolean): void {
    e.held.set(block, filling);
    let engines = this.blocksIndex.get(block);
    if (engines === undefined) this.blocksIndex.set(block, (engines = new Map()));
    engines.set(key, filling);
  }

  private release(key: string, e: EngineEvents, block: string): void {
    e.held.delete(block);
    const engines = this.blocksIndex.get(block);
    if (engines === undefined) return;
    engines.delete(key);
    if (engines.size === 0) this.blocksIndex.delete(block);
  }

  private clear(key: string, e: EngineEvents): void {
    for (const block of [...e.held.keys()]) this.release(key, e, block);
  }
}

function engineKey(pool: string, pod: string): string {
  return `${pool}\u0000${pod}`;
}
