/**
 * @module The JetStream objects of the protocol and their idempotent set-up,
 * shared by every party so whichever starts first creates them:
 * the per-pool call stream and its `runners` consumer (runners), a
 * namespace's `INTERLACE_INTR_<ns>` interrupt stream (runners and engines), an engine pod's
 * interrupt consumer (engines), the `interlace-runners` heartbeat bucket,
 * the `interlace-responses` bucket of stored Responses API turns (engines).
 *
 * Streams and buckets have `INTERLACE_NATS_REPLICAS` replicas (default 1;
 * 3 on the chart's three-node cluster, so losing one node loses nothing).
 *
 * Streams use file storage so a nats-server restart loses nothing, work-queue
 * retention so an acked message is gone, and a two-minute de-duplication
 * window for `Nats-Msg-Id` (publish retries, redelivered calls' results).
 */
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { EFFECTS_BUCKET, MAXDELIVER_STREAM } from "./reliability.js";
import {
  enginePodConsumer,
  enginePodSubjects,
  intrStream,
  namespaceIntrSubjects,
  poolStream,
  poolSubjects,
  RESPONSES_BUCKET,
  COST_MODELS_BUCKET,
  RUNNERS_BUCKET,
  RUNNERS_CONSUMER,
  type EnginePodRef,
  type PoolRef,
} from "./subjects.js";

const DUPLICATE_WINDOW_MS = 120_000;

/**
 * Expiry of each pull a long-lived `consume()` keeps open. A pull lives on
 * the server node that took it; when that node dies, the client sees it
 * only after two missed idle heartbeats (half the expiry each) and pulls
 * again elsewhere. The client's default (30 s) stalls delivery that long
 * after a node loss; 5 s costs one pull request per consumer every 5 s.
 */
export const CONSUME_EXPIRES_MS = 5_000;
/** Calls and interrupts nobody took within an hour are past any deadline. */
const MAX_AGE_MS = 3_600_000;

/** Replicas of every stream and bucket: `INTERLACE_NATS_REPLICAS` (1 to 5, default 1). */
export function natsReplicas(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env["INTERLACE_NATS_REPLICAS"];
  if (raw === undefined || raw === "") return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 5) throw new Error(`INTERLACE_NATS_REPLICAS must be an integer from 1 to 5, got "${raw}"`);
  return n;
}

function isCode(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  try {
    await jsm.streams.info(config.name);
    return;
  } catch (err) {
    if (!isCode(err, JetStreamApiCodes.StreamNotFound)) throw err;
  }
  try {
    await jsm.streams.add({ num_replicas: natsReplicas(), ...config });
  } catch (err) {
    // Another party created it between our info and add: fine if it exists now.
    await jsm.streams.info(config.name).catch(() => {
      throw err;
    });
  }
}

async function ensureConsumer(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }): Promise<void> {
  let exists = false;
  try {
    await jsm.consumers.info(stream, config.durable_name);
    exists = true;
  } catch (err) {
    if (!isCode(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
  }
  if (exists) {
    // Keep the consumer's delivery state; update only what may change (ack wait, max deliver, ...).
    const { durable_name: _d, deliver_policy: _p, filter_subject: _f, ack_policy: _a, ...update } = config;
    await jsm.consumers.update(stream, config.durable_name, update);
    return;
  }
  try {
    await jsm.consumers.add(stream, config);
  } catch (err) {
    await jsm.consumers.info(stream, config.durable_name).catch(() => {
      throw err;
    });
  }
}

/** The interrupt stream of `namespace`: every result and user/agent interrupt for its engines goes through it. */
export async function ensureIntrStream(jsm: JetStreamManager, namespace: string): Promise<void> {
  await ensureStream(jsm, {
    name: intrStream(namespace),
    subjects: [namespaceIntrSubjects(namespace)],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    max_age: nanos(MAX_AGE_MS),
  });
}

export interface PoolConsumerSettings {
  ackWaitMs: number;
  maxDeliver: number;
  /** Outstanding pull requests the consumer accepts (all runners' workers). */
  maxWaiting?: number;
}

/** A pool's call stream and the durable pull consumer its runners share. */
export async function ensurePoolStream(jsm: JetStreamManager, pool: PoolRef, settings: PoolConsumerSettings): Promise<void> {
  const stream = poolStream(pool);
  await ensureStream(jsm, {
    name: stream,
    subjects: [poolSubjects(pool)],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    max_age: nanos(MAX_AGE_MS),
  });
  await ensureConsumer(jsm, stream, {
    durable_name: RUNNERS_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: poolSubjects(pool),
    ack_wait: nanos(settings.ackWaitMs),
    max_deliver: settings.maxDeliver,
    max_ack_pending: -1,
    max_waiting: settings.maxWaiting ?? 4096,
  });
}

/** An engine pod's durable consumer (in its namespace's interrupt stream) of its own interrupt subjects; removed by the server after an hour unused. */
export async function ensureEngineConsumer(jsm: JetStreamManager, engine: EnginePodRef): Promise<string> {
  const name = enginePodConsumer(engine.pod);
  await ensureConsumer(jsm, intrStream(engine.namespace), {
    durable_name: name,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: enginePodSubjects(engine),
    ack_wait: nanos(30_000),
    max_ack_pending: -1,
    inactive_threshold: nanos(MAX_AGE_MS),
  });
  return name;
}

/** The runner heartbeat bucket (one key per live runner, history 1, values expire after `ttlMs`). */
export async function openRunnersBucket(nc: NatsConnection, ttlMs = 60_000): Promise<KV> {
  return new Kvm(nc).create(RUNNERS_BUCKET, { history: 1, ttl: ttlMs, storage: StorageType.File, replicas: natsReplicas() });
}

/**
 * The stored Responses bucket: a value expires `ttlMs` after it was written.
 * The retention is the engines' validated `--response-store-ttl-ms`; the
 * bucket takes the value of the engine that opens it last, so a changed
 * setting reaches the bucket with the rollout that changes it.
 */
export async function openResponsesBucket(nc: NatsConnection, ttlMs: number): Promise<KV> {
  const kv = await new Kvm(nc).create(RESPONSES_BUCKET, { history: 1, ttl: ttlMs, storage: StorageType.File, replicas: natsReplicas() });
  const jsm = await jetstreamManager(nc);
  const stream = `KV_${RESPONSES_BUCKET}`;
  const { config } = await jsm.streams.info(stream);
  if (config.max_age !== nanos(ttlMs)) await jsm.streams.update(stream, { ...config, max_age: nanos(ttlMs) });
  return kv;
}

/** The calibrated KV cost models (engine-pod/src/kv/shared-cost-models.ts): small, kept a week after their last write. */
export async function openCostModelsBucket(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(COST_MODELS_BUCKET, { history: 1, ttl: 7 * 24 * 3_600_000, storage: StorageType.File, replicas: natsReplicas() });
}

/** The effect log bucket (see reliability.ts): records live as long as a call may be redelivered. */
export async function openEffectsBucket(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(EFFECTS_BUCKET, { history: 1, ttl: MAX_AGE_MS, storage: StorageType.File, replicas: natsReplicas() });
}

/** The stream that keeps MAX_DELIVERIES advisories of every pool's `runners` consumer (see reliability.ts). */
export async function ensureMaxDeliverStream(jsm: JetStreamManager): Promise<void> {
  await ensureStream(jsm, {
    name: MAXDELIVER_STREAM,
    subjects: [`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.*.${RUNNERS_CONSUMER}`],
    retention: RetentionPolicy.Interest,
    storage: StorageType.File,
    max_age: nanos(MAX_AGE_MS),
  });
}

/** A pool's durable consumer of its own advisories in {@link MAXDELIVER_STREAM}; its name is the pool stream's. */
export async function ensureMaxDeliverConsumer(jsm: JetStreamManager, pool: PoolRef): Promise<string> {
  const name = poolStream(pool);
  await ensureConsumer(jsm, MAXDELIVER_STREAM, {
    durable_name: name,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${name}.${RUNNERS_CONSUMER}`,
    ack_wait: nanos(30_000),
    max_ack_pending: -1,
  });
  return name;
}

/** The heartbeat value a runner writes under its key. */
export interface RunnerHeartbeat {
  runner: string;
  /** Epoch ms when written (the reader uses the server's timestamp for staleness). */
  at: number;
  concurrency: number;
  inFlight: number;
  tools: string[];
  /** 90th percentile of the wait from publish to this runner starting a call, over the calls it started in the last 10 s (absent: none started). */
  waitP90Ms?: number;
}
