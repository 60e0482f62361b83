/**
 * @module What the operator reads and writes outside the cluster about
 * running apps, over NATS: it publishes each AgentApp's rendered config into
 * the `interlace-apps` bucket the routers watch (a change reaches every router
 * replica within moments, no restart, no ConfigMap volume sync delay, and no
 * Kubernetes API access for the routers), and it reads back the live figures
 * the status reports: which routers serve an app's current config and with
 * how many sessions (`interlace-routers`), how many engines of a pool are
 * ready (`interlace-engines`), and a tool pool's calls in flight
 * (`interlace-runners`); for the joint autoscaler, the engines' load figures,
 * the requests the routers hold for a pool with no ready engine (what wakes a
 * pool at zero), and a tool pool's JetStream consumer backlog with its
 * runners' p90 wait.
 * Injectable: without a NATS URL nothing is observed and the reconcilers say
 * so.
 */
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats, type NatsSecurity } from "../../../common/src/security/nats-connect.js";
import type { Logger } from "pino";
import {
  appConfigHash,
  appKey,
  encodeToken,
  ensurePoolStream,
  kvKeys,
  openAppsBucket,
  openEnginesBucket,
  openRoutersBucket,
  openRunnersBucket,
  parseEngineHeartbeat,
  poolStream,
  RUNNERS_CONSUMER,
  type AppAuth,
  type AppConfig,
  parseAppConfig,
  parseRouterPresence,
  type PoolConsumerSettings,
  type PoolRef,
  type RouterPresence,
  type RunnerHeartbeat,
} from "../../../common/src/protocol/index.js";
import type { EngineSignal, ToolPoolSignal } from "../autoscaling/index.js";

export interface AppLiveStatus {
  /** Routers with a fresh presence serving exactly this config. */
  routers: number;
  /** Sessions open through those routers. */
  activeSessions: number;
}

export interface LiveState {
  /** False when nothing outside the cluster is observed (no NATS URL). */
  readonly observed: boolean;
  publishApp(config: AppConfig): Promise<void>;
  withdrawApp(namespace: string, name: string): Promise<void>;
  /** The key identities of the app's config as published (undefined: none, or unreadable): where a key rotation's window survives an operator restart. */
  publishedAuth(namespace: string, name: string): Promise<AppAuth | undefined>;
  app(config: AppConfig): Promise<AppLiveStatus>;
  /** Engines of a pool whose fresh heartbeat says ready. */
  readyEngines(namespace: string, pool: string): Promise<number>;
  /** Calls being executed by a tool pool's live runners. */
  callsInFlight(namespace: string, pool: string): Promise<number>;
  /** Load figures of a pool's engines with a fresh heartbeat. */
  engineSignals(namespace: string, pool: string): Promise<EngineSignal[]>;
  /** Requests the routers with a fresh presence hold for an EnginePool with no ready engine, summed. */
  heldRequests(namespace: string, pool: string): Promise<number>;
  /** A tool pool's consumer backlog and its runners' p90 wait; null while the pool has no consumer yet. */
  toolPoolSignal(namespace: string, pool: string): Promise<ToolPoolSignal | null>;
  /**
   * Creates a tool pool's call stream and runners' consumer as its runners
   * would (idempotent): a pool that starts at zero then stores its first
   * calls, and their backlog is the signal that wakes it.
   */
  preparePoolStream(pool: PoolRef, settings: PoolConsumerSettings): Promise<void>;
  close(): Promise<void>;
}

export const unobservedLiveState: LiveState = {
  observed: false,
  publishApp: async () => {},
  withdrawApp: async () => {},
  publishedAuth: async () => undefined,
  app: async () => ({ routers: 0, activeSessions: 0 }),
  readyEngines: async () => 0,
  callsInFlight: async () => 0,
  engineSignals: async () => [],
  heldRequests: async () => 0,
  toolPoolSignal: async () => null,
  preparePoolStream: async () => {},
  close: async () => {},
};

/** A router presence or engine heartbeat older than this is not counted. */
const FRESH_MS = 15_000;

async function values(kv: KV, filter: string): Promise<{ key: string; data: unknown; created: number }[]> {
  const out: { key: string; data: unknown; created: number }[] = [];
  for (const key of await kvKeys(kv, filter)) {
    const e = await kv.get(key);
    if (e === null || e.operation !== "PUT") continue;
    try {
      out.push({ key, data: e.json(), created: e.created.getTime() });
    } catch {
      // a malformed value counts as absent
    }
  }
  return out;
}

export class NatsLiveState implements LiveState {
  readonly observed = true;
  private conn: Promise<{ nc: NatsConnection; jsm: JetStreamManager; apps: KV; routers: KV; engines: KV; runners: KV }> | null = null;

  constructor(
    private readonly natsUrl: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    /** The operator's NATS identity and CA, read at connect time. */
    private readonly security: () => NatsSecurity = () => ({}),
  ) {}

  private buckets(): Promise<{ nc: NatsConnection; jsm: JetStreamManager; apps: KV; routers: KV; engines: KV; runners: KV }> {
    if (this.conn === null) {
      const p = (async () => {
        const nc = await connectNats({ servers: this.natsUrl, name: "interlace-operator-live", security: this.security() });
        const [apps, routers, engines, runners] = await Promise.all([openAppsBucket(nc), openRoutersBucket(nc), openEnginesBucket(nc), openRunnersBucket(nc)]);
        return { nc, jsm: await jetstreamManager(nc), apps, routers, engines, runners };
      })();
      // A failed connect is retried on the next call instead of being cached.
      p.catch((err: unknown) => {
        this.log.warn({ err }, "NATS not reachable for app configs and live status");
        if (this.conn === p) this.conn = null;
      });
      this.conn = p;
    }
    return this.conn;
  }

  async publishApp(config: AppConfig): Promise<void> {
    const { apps } = await this.buckets();
    const key = appKey(config.namespace, config.name);
    const value = JSON.stringify(config);
    const current = await apps.get(key);
    if (current?.operation === "PUT" && current.string() === value) return;
    await apps.put(key, value);
  }

  async withdrawApp(namespace: string, name: string): Promise<void> {
    const { apps } = await this.buckets();
    await apps.delete(appKey(namespace, name));
  }

  async publishedAuth(namespace: string, name: string): Promise<AppAuth | undefined> {
    const { apps } = await this.buckets();
    const e = await apps.get(appKey(namespace, name));
    if (e === null || e.operation !== "PUT") return undefined;
    try {
      const parsed = parseAppConfig(e.json());
      return parsed.ok ? parsed.value.auth : undefined;
    } catch {
      return undefined;
    }
  }

  async app(config: AppConfig): Promise<AppLiveStatus> {
    const { routers } = await this.buckets();
    const hash = appConfigHash(config);
    const id = `${config.namespace}/${config.name}`;
    let serving = 0;
    let sessions = 0;
    for (const { data } of await values(routers, ">")) {
      const p = parseRouterPresence(data);
      if (p === null || this.now() - p.at > FRESH_MS) continue;
      const entry = Object.hasOwn(p.apps, id) ? p.apps[id] : undefined;
      if (entry === undefined) continue;
      sessions += entry.activeSessions;
      if (entry.hash === hash) serving++;
    }
    return { routers: serving, activeSessions: sessions };
  }

  async readyEngines(namespace: string, pool: string): Promise<number> {
    const { engines } = await this.buckets();
    let n = 0;
    for (const { data, created } of await values(engines, `${encodeToken(namespace)}.${encodeToken(pool)}.*`)) {
      const parsed = parseEngineHeartbeat(data);
      if (parsed.ok && parsed.value.ready && this.now() - created <= FRESH_MS) n++;
    }
    return n;
  }

  async callsInFlight(namespace: string, pool: string): Promise<number> {
    const { runners } = await this.buckets();
    let n = 0;
    for (const { data } of await values(runners, `${encodeToken(namespace)}.${encodeToken(pool)}.*`)) {
      const h = data as RunnerHeartbeat;
      if (Number.isInteger(h?.inFlight) && h.inFlight > 0 && typeof h.at === "number" && this.now() - h.at <= FRESH_MS) n += h.inFlight;
    }
    return n;
  }

  async engineSignals(namespace: string, pool: string): Promise<EngineSignal[]> {
    const { engines } = await this.buckets();
    const out: EngineSignal[] = [];
    for (const { data, created } of await values(engines, `${encodeToken(namespace)}.${encodeToken(pool)}.*`)) {
      const parsed = parseEngineHeartbeat(data);
      if (parsed.ok && this.now() - created <= FRESH_MS) out.push(parsed.value);
    }
    return out;
  }

  async heldRequests(namespace: string, pool: string): Promise<number> {
    const { routers } = await this.buckets();
    const key = `${namespace}/${pool}`;
    let n = 0;
    for (const { data } of await values(routers, ">")) {
      const p = parseRouterPresence(data);
      if (p === null || this.now() - p.at > FRESH_MS) continue;
      n += (Object.hasOwn(p.held ?? {}, key) ? p.held?.[key] : undefined) ?? 0;
    }
    return n;
  }

  async toolPoolSignal(namespace: string, pool: string): Promise<ToolPoolSignal | null> {
    const { jsm, runners } = await this.buckets();
    let info;
    try {
      info = await jsm.consumers.info(poolStream({ namespace, name: pool }), RUNNERS_CONSUMER);
    } catch (err) {
      // No runner has created the stream and consumer yet (a new pool, or one at zero from the start).
      if (err instanceof JetStreamApiError && (err.code === JetStreamApiCodes.ConsumerNotFound || err.code === JetStreamApiCodes.StreamNotFound)) return null;
      throw err;
    }
    // The slowest runner's p90 wait: a backlog shows on the runners that take from it.
    let waitP90Ms: number | undefined;
    for (const { data } of await values(runners, `${encodeToken(namespace)}.${encodeToken(pool)}.*`)) {
      const h = data as RunnerHeartbeat;
      if (typeof h?.at !== "number" || this.now() - h.at > FRESH_MS || typeof h.waitP90Ms !== "number") continue;
      waitP90Ms = Math.max(waitP90Ms ?? 0, h.waitP90Ms);
    }
    return { pending: info.num_pending, ackPending: info.num_ack_pending, delivered: info.delivered.consumer_seq, ...(waitP90Ms !== undefined ? { waitP90Ms } : {}) };
  }

  async preparePoolStream(pool: PoolRef, settings: PoolConsumerSettings): Promise<void> {
    const { jsm } = await this.buckets();
    await ensurePoolStream(jsm, pool, settings);
  }

  async close(): Promise<void> {
    const conn = this.conn;
    this.conn = null;
    if (conn) await (await conn.catch(() => null))?.nc.close();
  }
}
