/**
 * @module Engine heartbeats: every engine pod writes its load and the prefix
 * hashes it holds resident under one key of the `interlace-engines` KV
 * bucket, about once a second; routers watch the bucket and place sessions
 * from it. The bucket's values expire (`ENGINES_BUCKET_TTL_MS`) and readers
 * drop an engine whose last heartbeat they saw longer ago than their own
 * staleness bound, so a SIGKILLed engine leaves placement within seconds even
 * though nothing deletes its key.
 */
import { StorageType } from "@nats-io/jetstream";
import { natsReplicas } from "./streams.js";
import { reopening } from "./reopening-kv.js";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { decodeToken, encodeToken } from "./subjects.js";
import type { KvEventPosition } from "./kv-events.js";

export const ENGINES_BUCKET = "interlace-engines";
/** The window of an engine's `ttftP90Ms`: the first tokens of the last this many ms. */
export const ENGINE_TTFT_WINDOW_MS = 30_000;
/** Values older than this are purged by the server (readers use their own, shorter bound). */
export const ENGINES_BUCKET_TTL_MS = 10_000;

/** What an engine pod reports about itself. Plain JSON. */
export interface EngineHeartbeat {
  /** Pod name (unique; a NATS subject token). */
  pod: string;
  /** Base URL of the pod's HTTP API, reachable from the routers (pod IP, not the Service). */
  endpoint: string;
  /** The EnginePool: namespace and name. */
  pool: { namespace: string; name: string };
  /** Model name or file. */
  model: string;
  /** Accepting sessions (model loaded, not shutting down). */
  ready: boolean;
  /**
   * Shutting down after its live sessions (SIGTERM): not ready, but its
   * sessions still run and their streams stay routed here (absent: false).
   */
  draining?: boolean;
  freeSequences: number;
  /**
   * Held sequences the engine would give a new session now, by taking a
   * paused session's KV cells (its retention policy; absent: none). Placement
   * counts them as free.
   */
  reclaimableSequences?: number;
  totalSequences: number;
  /** Sessions admitted but waiting for a sequence. */
  queuedSessions: number;
  /** Live sessions on the engine (running, trapped or queued). */
  activeSessions: number;
  kvCellsUsed: number;
  kvCellsTotal: number;
  /** Tokens decoded plus prefilled per second, over the last heartbeat interval. */
  tokensPerSecond: number;
  /**
   * 90th percentile of the time to first token, ms, of the sessions and
   * completions whose first token came in the last {@link ENGINE_TTFT_WINDOW_MS}
   * (absent: none did,
   * or an engine older than this field). The autoscaler compares it with an
   * app's `slo.ttftP90Ms`.
   */
  ttftP90Ms?: number;
  /**
   * Sessions and completions the engine has admitted since it started
   * (monotonic). The answer that admitted a request names its count
   * ({@link ADMISSION_HEADER}); a heartbeat whose count is at least that
   * shows the request in its figures, so a router releases its placement
   * reservation then (absent: an engine older than this field; routers
   * fall back to timing).
   */
  admissions?: number;
  /** Prefix hashes (common/prefix-hash chains) the engine holds resident, or is prefilling. */
  prefixes: string[];
  /**
   * Those of `prefixes` only a live session's prefill is putting into cells
   * now (absent: none). A session sent there waits for that fill and then
   * forks it; an engine already holding the prefix serves it sooner.
   */
  fillingPrefixes?: string[];
  /**
   * The KV event (protocol/kv-events) `prefixes` reflect: a router that
   * missed events resyncs from here (absent: the engine publishes none).
   */
  kvEvents?: KvEventPosition;
  /** Writer's clock, epoch ms (informational: readers time staleness by arrival). */
  at: number;
}

/** Response header of an answer that admitted a request: the engine's {@link EngineHeartbeat.admissions} count once it did. */
export const ADMISSION_HEADER = "x-interlace-admission";

/** The count an {@link ADMISSION_HEADER} names; undefined when absent or malformed (the router then times the release). */
export function parseAdmission(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || !/^\d{1,15}$/.test(value)) return undefined;
  return Number(value);
}

export function engineKey(pool: { namespace: string; name: string }, pod: string): string {
  return `${encodeToken(pool.namespace)}.${encodeToken(pool.name)}.${encodeToken(pod)}`;
}

export function parseEngineKey(key: string): { pool: { namespace: string; name: string }; pod: string } | null {
  const parts = key.split(".");
  if (parts.length !== 3) return null;
  try {
    return { pool: { namespace: decodeToken(parts[0]!), name: decodeToken(parts[1]!) }, pod: decodeToken(parts[2]!) };
  } catch {
    return null;
  }
}

function isCount(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v) && v >= 0;
}

/** Validates a heartbeat value; null (and the reason) for anything malformed. */
export function parseEngineHeartbeat(data: unknown): { ok: true; value: EngineHeartbeat } | { ok: false; reason: string } {
  if (data === null || typeof data !== "object") return { ok: false, reason: "not an object" };
  const h = data as Record<string, unknown>;
  for (const k of ["pod", "endpoint", "model"] as const) if (typeof h[k] !== "string" || h[k] === "") return { ok: false, reason: `${k} must be a non-empty string` };
  const pool = h["pool"] as Record<string, unknown> | undefined;
  if (pool === null || typeof pool !== "object" || typeof pool["namespace"] !== "string" || typeof pool["name"] !== "string") {
    return { ok: false, reason: "pool must be {namespace, name}" };
  }
  if (typeof h["ready"] !== "boolean") return { ok: false, reason: "ready must be a boolean" };
  if (h["draining"] !== undefined && typeof h["draining"] !== "boolean") return { ok: false, reason: "draining must be a boolean" };
  for (const k of ["freeSequences", "totalSequences", "queuedSessions", "activeSessions", "kvCellsUsed", "kvCellsTotal", "tokensPerSecond", "at"] as const) {
    if (!isCount(h[k])) return { ok: false, reason: `${k} must be a non-negative number` };
  }
  if (!Array.isArray(h["prefixes"]) || !h["prefixes"].every((p) => typeof p === "string")) return { ok: false, reason: "prefixes must be a string array" };
  if (h["reclaimableSequences"] !== undefined && !isCount(h["reclaimableSequences"])) return { ok: false, reason: "reclaimableSequences must be a non-negative number" };
  if (h["ttftP90Ms"] !== undefined && !isCount(h["ttftP90Ms"])) return { ok: false, reason: "ttftP90Ms must be a non-negative number" };
  if (h["admissions"] !== undefined && (!Number.isInteger(h["admissions"]) || !isCount(h["admissions"]))) return { ok: false, reason: "admissions must be a non-negative integer" };
  const filling = h["fillingPrefixes"];
  if (filling !== undefined && (!Array.isArray(filling) || !filling.every((p) => typeof p === "string"))) return { ok: false, reason: "fillingPrefixes must be a string array" };
  const position = h["kvEvents"] as Record<string, unknown> | undefined;
  if (position !== undefined && (position === null || typeof position !== "object" || typeof position["epoch"] !== "string" || position["epoch"] === "" || !Number.isInteger(position["seq"]) || !isCount(position["seq"]))) {
    return { ok: false, reason: "kvEvents must be {epoch: non-empty string, seq: non-negative integer}" };
  }
  return { ok: true, value: data as EngineHeartbeat };
}

/** The heartbeat bucket (history 1, values expire). Idempotent: whichever party starts first creates it. */
export async function openEnginesBucket(nc: NatsConnection): Promise<KV> {
  const create = (): Promise<KV> => new Kvm(nc).create(ENGINES_BUCKET, { history: 1, ttl: ENGINES_BUCKET_TTL_MS, storage: StorageType.Memory, replicas: natsReplicas() });
  // A memory bucket: created again when a restart of NATS lost it.
  return reopening(await create(), create);
}
