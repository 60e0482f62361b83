/**
 * @module AgentApp configs as the routers read them, and the routers'
 * presence. The operator renders each AgentApp into an {@link AppConfig} and
 * writes it under `<namespace>.<name>` in the `interlace-apps` KV bucket
 * (deleting the key when the app goes); routers watch the bucket, so a change
 * reaches every replica within moments and without a restart. Each router
 * writes a {@link RouterPresence} into `interlace-routers` (values expire):
 * which app configs it serves, by content hash, and its live session counts —
 * what the operator's AgentApp Ready condition and `activeSessions` read —
 * and the requests it holds per EnginePool with no ready engine, which the
 * operator's autoscaler reads to wake a pool at zero.
 */
import { createHash } from "node:crypto";
import { StorageType } from "@nats-io/jetstream";
import { natsReplicas } from "./streams.js";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { stableJson } from "../prefix-hash.js";
import type { CallingMode, ChatMessage, RetentionHint, SessionSpeculation } from "../session.js";
import type { SemanticFunction } from "../semantic-function.js";
import type { ToolSpec } from "../tools.js";
import { decodeToken, encodeToken } from "./subjects.js";

export const APPS_BUCKET = "interlace-apps";
export const ROUTERS_BUCKET = "interlace-routers";
/** Router presence values expire after this; routers rewrite theirs every few seconds. */
export const ROUTERS_BUCKET_TTL_MS = 30_000;

/** One AgentApp, rendered with defaults filled in: what the router merges with each request. */
export interface AppConfig {
  namespace: string;
  name: string;
  /** The EnginePool serving the app, by name: the router places each session on one of its engines (heartbeats), never through a Service. */
  enginePool: { name: string };
  systemPrompt: string;
  fewShot: { messages: ChatMessage[] }[];
  callingMode: CallingMode;
  objective: "latency" | "throughput";
  interrupts: { userInterrupts: boolean; maxQueued: number };
  /** Copied by the router onto every session request of the app (pools as `namespace/name`). */
  speculation: Required<Pick<SessionSpeculation, "enabled" | "lambda" | "maxInFlight" | "engineSide">> & { pools?: string[] };
  /** Checked by the operator (names, placeholders declared, outputs in template order with their settings). */
  semanticFunctions: SemanticFunction[];
  maxTokens: number;
  tools: ToolSpec[];
  /** The AgentApp's KV retention hint, sent with each session that gives none (`spec.kvRetention`). */
  retention?: RetentionHint;
}

/** The fields an app must name; everything else has the AgentApp's defaults. */
export type AppConfigInput = Pick<AppConfig, "namespace" | "name" | "enginePool" | "systemPrompt" | "tools"> & Partial<AppConfig>;

/** A config with the defaults an AgentApp gets for what its spec leaves out (async, latency, no speculation). */
export function withAppDefaults(input: AppConfigInput): AppConfig {
  return {
    fewShot: [],
    callingMode: "async",
    objective: "latency",
    interrupts: { userInterrupts: true, maxQueued: 64 },
    speculation: { enabled: false, lambda: 1, maxInFlight: 2, engineSide: true },
    semanticFunctions: [],
    maxTokens: 1024,
    ...input,
  };
}

export function appKey(namespace: string, name: string): string {
  return `${encodeToken(namespace)}.${encodeToken(name)}`;
}

export function parseAppKey(key: string): { namespace: string; name: string } | null {
  const parts = key.split(".");
  if (parts.length !== 2) return null;
  try {
    return { namespace: decodeToken(parts[0]!), name: decodeToken(parts[1]!) };
  } catch {
    return null;
  }
}

/** Content hash of a config (stable JSON): how a router says which version it serves. */
export function appConfigHash(config: AppConfig): string {
  return createHash("sha256").update(stableJson(config)).digest("hex").slice(0, 16);
}

/** Checks the shape the router relies on; the reason names the first bad field. */
export function parseAppConfig(data: unknown): { ok: true; value: AppConfig } | { ok: false; reason: string } {
  if (data === null || typeof data !== "object") return { ok: false, reason: "not an object" };
  const c = data as Record<string, unknown>;
  for (const k of ["namespace", "name", "systemPrompt", "callingMode", "objective"] as const) {
    if (typeof c[k] !== "string") return { ok: false, reason: `${k} must be a string` };
  }
  const pool = c["enginePool"] as Record<string, unknown> | null | undefined;
  if (pool === null || typeof pool !== "object" || typeof pool["name"] !== "string") return { ok: false, reason: "enginePool.name must be a string" };
  if (!Array.isArray(c["fewShot"])) return { ok: false, reason: "fewShot must be an array" };
  if (!Array.isArray(c["tools"])) return { ok: false, reason: "tools must be an array" };
  const intr = c["interrupts"] as Record<string, unknown> | null | undefined;
  if (intr === null || typeof intr !== "object" || typeof intr["userInterrupts"] !== "boolean" || typeof intr["maxQueued"] !== "number") {
    return { ok: false, reason: "interrupts must be {userInterrupts, maxQueued}" };
  }
  if (typeof c["maxTokens"] !== "number") return { ok: false, reason: "maxTokens must be a number" };
  const fns = c["semanticFunctions"];
  if (!Array.isArray(fns)) return { ok: false, reason: "semanticFunctions must be an array" };
  for (const [i, f] of fns.entries()) {
    const fn = f as Record<string, unknown> | null;
    if (fn === null || typeof fn !== "object" || typeof fn["name"] !== "string" || typeof fn["template"] !== "string" || !Array.isArray(fn["outputs"])) {
      return { ok: false, reason: `semanticFunctions[${i}] must be {name, template, outputs, tools}` };
    }
  }
  return { ok: true, value: data as AppConfig };
}

/** What a router writes about itself under its own key in `interlace-routers`. */
export interface RouterPresence {
  router: string;
  /** Epoch ms when written. */
  at: number;
  /** App key → the config hash it serves and the sessions it has open for the app. */
  apps: Record<string, { hash: string; activeSessions: number }>;
  /** EnginePool (`namespace/name`) → requests held now waiting for a ready engine (the cold-start hold); pools with none are left out. */
  held?: Record<string, number>;
}

export async function openAppsBucket(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(APPS_BUCKET, { history: 1, storage: StorageType.File, replicas: natsReplicas() });
}

export async function openRoutersBucket(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(ROUTERS_BUCKET, { history: 1, ttl: ROUTERS_BUCKET_TTL_MS, storage: StorageType.Memory, replicas: natsReplicas() });
}

/**
 * Placements in flight, shared by every front door (router replicas, the
 * endpoint picker): one key per EnginePool (`<namespace>.<name>`), written
 * by compare-and-set (router/src/shared-reservations.ts).
 */
export const RESERVATIONS_BUCKET = "interlace-reservations";
/** A pool's key expires once no front door has placed on it for this long (its reservations are long over). */
export const RESERVATIONS_BUCKET_TTL_MS = 300_000;

/** One placement a front door made on an engine, until the engine's heartbeat shows it (or it is released, or expires). */
export interface PlacementReservation {
  /** Unique per reservation. */
  id: string;
  /** The front door process that holds it. */
  holder: string;
  pod: string;
  /** The engine took the request: its next heartbeat will count it. */
  confirmed?: boolean;
}

export function reservationsKey(namespace: string, pool: string): string {
  return appKey(namespace, pool);
}

export function parseReservations(data: unknown): PlacementReservation[] | null {
  if (data === null || typeof data !== "object" || !Array.isArray((data as { held?: unknown }).held)) return null;
  const held = (data as { held: unknown[] }).held;
  const ok = held.every((r) => r !== null && typeof r === "object" && typeof (r as PlacementReservation).id === "string" && typeof (r as PlacementReservation).holder === "string" && typeof (r as PlacementReservation).pod === "string");
  return ok ? (held as PlacementReservation[]) : null;
}

export async function openReservationsBucket(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(RESERVATIONS_BUCKET, { history: 1, ttl: RESERVATIONS_BUCKET_TTL_MS, storage: StorageType.Memory, replicas: natsReplicas() });
}
