/**
 * @module The engine's heartbeat: about once a second, the pod's load and the
 * prefix hashes it holds resident go into its key of the `interlace-engines`
 * KV bucket, where the routers read them for placement (and the operator's
 * autoscaler its load and recent TTFT p90). Between beats, a rise in the
 * sequences the engine can give a new session (free, or held by a session
 * paused on a tool call) beats at once: requests waiting in a router for a
 * sequence (its capacity queue, its wait for a prefix's engine) place on
 * the heartbeat, and a session's tool call is often shorter than the
 * interval, so its sequence would otherwise never show. On close the key is
 * deleted, so a gracefully stopped engine leaves placement at once; a killed
 * one ages out (routers drop a heartbeat they have not seen refreshed).
 */
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../../common/src/index.js";
import { engineKey, openEnginesBucket, type EngineHeartbeat } from "../../../common/src/protocol/index.js";
import type { AdvertisedPrefixes, Engine, EngineStats } from "../engine/index.js";
import type { KvEventPublisher } from "./kv-event-publisher.js";

export interface HeartbeatOptions {
  pod: string;
  endpoint: string;
  pool: { namespace: string; name: string };
  model: string;
  intervalMs: number;
  /** How often the capacity a heartbeat carries is compared with the engine's; a rise beats at once (0 or absent: only every `intervalMs`). */
  capacityCheckMs?: number;
  log: Logger;
  /** The pod's KV events, whose last published state the heartbeat carries (absent: the engine's prefixes as they are). */
  kvEvents?: KvEventPublisher;
  /** The recent TTFT p90, ms (undefined: no first token lately); absent: the heartbeat carries none. */
  ttftP90Ms?: () => number | undefined;
}

/** Stats fields the engine-core split adds; read when present, derived when not. */
type LoadStats = EngineStats & Partial<{ freeSequences: number; totalSequences: number; queuedSessions: number; tokensPerSecond: number }>;

/** The heartbeat value for an engine's current stats (pure, for tests). */
export function heartbeatOf(
  engine: Pick<Engine, "stats" | "advertisedPrefixes" | "ready">,
  identity: Pick<EngineHeartbeat, "pod" | "endpoint" | "pool" | "model">,
  tokensPerSecond: number,
  accepting: boolean,
  kvEvents?: ReturnType<KvEventPublisher["snapshot"]>,
): EngineHeartbeat {
  const stats = engine.stats() as LoadStats;
  const total = stats.totalSequences ?? stats.maxSessions;
  return {
    ...identity,
    ready: accepting && engine.ready,
    ...(accepting ? {} : { draining: true }),
    freeSequences: freeOf(stats),
    ...(stats.retention !== undefined && stats.retention.reclaimableSequences > 0 ? { reclaimableSequences: stats.retention.reclaimableSequences } : {}),
    totalSequences: total,
    queuedSessions: stats.queuedSessions ?? 0,
    activeSessions: stats.activeSessions,
    kvCellsUsed: stats.kvCellsUsed,
    kvCellsTotal: stats.kvCellsTotal,
    tokensPerSecond: stats.tokensPerSecond ?? tokensPerSecond,
    // Read with the figures above (one stats() call): every admission it counts is in them.
    ...(stats.admissions !== undefined ? { admissions: stats.admissions } : {}),
    // With KV events, the prefixes exactly as last published, and which event that was (routers resync from it).
    ...advertised(kvEvents?.prefixes ?? engine.advertisedPrefixes()),
    ...(kvEvents !== undefined ? { kvEvents: kvEvents.position } : {}),
    at: Date.now(),
  };
}

function freeOf(stats: LoadStats): number {
  return Math.max(0, stats.freeSequences ?? (stats.totalSequences ?? stats.maxSessions) - stats.activeSessions);
}

/** The sequences the engine offers a new session: free ones and those it can take from sessions paused on tool calls. */
function capacityOf(stats: LoadStats): number {
  return freeOf(stats) + (stats.retention?.reclaimableSequences ?? 0);
}

/** The heartbeat's prefix fields: `fillingPrefixes` only when some are being filled. */
function advertised(p: AdvertisedPrefixes): Pick<EngineHeartbeat, "prefixes" | "fillingPrefixes"> {
  return { prefixes: p.hashes, ...(p.filling.length > 0 ? { fillingPrefixes: p.filling } : {}) };
}

export class HeartbeatPublisher {
  private timer: NodeJS.Timeout | undefined;
  private capacityTimer: NodeJS.Timeout | undefined;
  /** What the last heartbeat put carried (while one is being put, what it carries): capacity, and the admissions counted in it. */
  private published = { capacity: 0, admissions: 0 };
  /** A put in flight: a capacity check does not start another. */
  private beating = false;
  private engine: Engine | undefined;
  private accepting = true;
  private last = { at: performance.now(), tokens: 0 };
  private closed = false;
  private readonly key: string;

  private constructor(
    private readonly kv: KV,
    private readonly options: HeartbeatOptions,
  ) {
    this.key = engineKey(options.pool, options.pod);
  }

  /** Publishes over `nc`, the engine pod's one NATS connection (shared with its executor; its owner closes it). */
  static async open(nc: NatsConnection, options: HeartbeatOptions): Promise<HeartbeatPublisher> {
    return new HeartbeatPublisher(await openEnginesBucket(nc), options);
  }

  /** Starts beating for `engine` (the first beat goes out at once). */
  start(engine: Engine): void {
    this.engine = engine;
    this.last = { at: performance.now(), tokens: engine.stats().tokensDecoded + engine.stats().tokensPrefilled };
    void this.beat();
    this.timer = setInterval(() => void this.beat(), this.options.intervalMs);
    this.timer.unref();
    const every = this.options.capacityCheckMs ?? 0;
    if (every > 0) {
      this.capacityTimer = setInterval(() => this.checkCapacity(), every);
      this.capacityTimer.unref();
    }
  }

  /**
   * Beats now when the engine can take more new sessions than the routers
   * believe: the last heartbeat's capacity less the sessions admitted since
   * (each router holds a reservation for those until a heartbeat counts them).
   */
  private checkCapacity(): void {
    const engine = this.engine;
    if (engine === undefined || this.closed || this.beating) return;
    const stats = engine.stats() as LoadStats;
    const believed = this.published.capacity - Math.max(0, (stats.admissions ?? this.published.admissions) - this.published.admissions);
    if (capacityOf(stats) > believed) void this.beat();
  }

  /** Publishes one heartbeat now (also what the timer calls). */
  async beat(): Promise<void> {
    const engine = this.engine;
    if (engine === undefined || this.closed) return;
    try {
      const stats = engine.stats();
      const now = performance.now();
      const tokens = stats.tokensDecoded + stats.tokensPrefilled;
      const rate = now > this.last.at ? ((tokens - this.last.tokens) * 1000) / (now - this.last.at) : 0;
      this.last = { at: now, tokens };
      const { pod, endpoint, pool, model } = this.options;
      const value = heartbeatOf(engine, { pod, endpoint, pool, model }, Math.round(rate * 10) / 10, this.accepting, this.options.kvEvents?.snapshot());
      const ttftP90Ms = this.options.ttftP90Ms?.();
      this.published = { capacity: value.freeSequences + (value.reclaimableSequences ?? 0), admissions: value.admissions ?? 0 };
      this.beating = true;
      await this.kv.put(this.key, JSON.stringify(ttftP90Ms !== undefined ? { ...value, ttftP90Ms } : value));
    } catch (err) {
      if (!this.closed) this.options.log.warn({ err }, "heartbeat not published");
    } finally {
      this.beating = false;
    }
  }

  /**
   * Says "not ready, draining" at once (shutdown starts), so routers stop
   * placing here; the beats go on (still draining) until {@link close}, so
   * routers keep relaying the live sessions' streams.
   */
  async drain(): Promise<void> {
    this.accepting = false;
    await this.beat();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.timer);
    clearInterval(this.capacityTimer);
    await this.drain();
    this.closed = true;
    await this.kv.delete(this.key).catch(() => undefined);
  }
}
