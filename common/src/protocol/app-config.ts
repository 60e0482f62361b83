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
import { reopening } from "./reopening-kv.js";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { stableJson } from "../prefix-hash.js";
import type { CallingMode, ChatMessage, RetentionHint, SessionSpeculation } from "../session.js";
import type { SemanticFunction } from "../semantic-function.js";
import type { ToolSpec } from "../tools.js";
import { decodeToken, encodeToken } from "./subjects.js";
import { compileSchema } from "../wire/validator.js";
import { appConfigSchema } from "./app-config-schema.js";

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
  /**
   * The API keys that may use this app (`spec.auth`), by identity only:
   * present, the app accepts these keys and no other; absent, the router's
   * own key file decides (see router/src/app-access.ts).
   */
  auth?: AppAuth;
}

/** One API key an app accepts: a stable id (what owns what it creates) and the SHA-256 of the key, never the key. */
export interface AppKeyIdentity {
  /** `secret:<namespace>/<Secret>/<data key>`: the same across rotations of the key's value. */
  id: string;
  /** Hex SHA-256 of the key as the client sends it. */
  sha256: string;
  /**
   * The key's value before its Secret last changed, still accepted (as the
   * same id) until `validUntil` (epoch ms): a rotation's grace window.
   */
  previous?: { sha256: string; validUntil: number };
}

/** Whether `digest` is key `k`'s, or its previous value's within the grace window. */
export function appKeyMatches(k: AppKeyIdentity, digest: string, now = Date.now()): boolean {
  return k.sha256 === digest || (k.previous !== undefined && k.previous.sha256 === digest && now < k.previous.validUntil);
}

export interface AppAuth {
  keys: AppKeyIdentity[];
}

/** The key id of Secret `name`'s entry `key` in `namespace`: contains ":", which a key-file principal never does. */
export function appKeyId(namespace: string, name: string, key: string): string {
  return `secret:${namespace}/${name}/${key}`;
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

const validateAppConfig = compileSchema<AppConfig>(appConfigSchema, "app");

/** Checks every field the router relies on (app-config-schema.ts); the reason names the bad fields. */
export function parseAppConfig(data: unknown): { ok: true; value: AppConfig } | { ok: false; reason: string } {
  const checked = validateAppConfig(data);
  return checked.ok ? checked : { ok: false, reason: checked.error };
}

/** What a router writes about itself under its own key in `interlace-routers`. */
export interface RouterPresence {
  router: string;
  /** Epoch ms when written. */
  at: number;
  /** App key → the config hash it serves and the sessions it has open for the app. */
  apps: Record<string, { hash: string; activeSessions: number }>;
  /** EnginePool (`namespace/name`) → requests the router holds now: waiting for a ready engine (the cold-start hold) or, with every engine full, for a free sequence (the capacity queue); pools with none are left out. */
  held?: Record<string, number>;
}

const wholeCount = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 0;

/**
 * A presence value as read from the bucket (anyone with write access may
 * have written it): null unless `at` is a number; entries of `apps` and
 * `held` that are not well formed are left out, so the counts summed from
 * them stay whole numbers.
 */
export function parseRouterPresence(data: unknown): RouterPresence | null {
  if (data === null || typeof data !== "object" || Array.isArray(data)) return null;
  const p = data as Record<string, unknown>;
  if (typeof p["at"] !== "number" || !Number.isFinite(p["at"])) return null;
  const entries = (v: unknown): [string, unknown][] => (v !== null && typeof v === "object" ? Object.entries(v) : []);
  // Object.fromEntries makes own properties: a `__proto__` key stays a key.
  const apps = Object.fromEntries(
    entries(p["apps"]).flatMap(([id, entry]) => {
      const e = entry as Record<string, unknown> | null;
      return e !== null && typeof e === "object" && typeof e["hash"] === "string" && wholeCount(e["activeSessions"]) ? [[id, { hash: e["hash"], activeSessions: e["activeSessions"] }]] : [];
    }),
  );
  const held = Object.fromEntries(entries(p["held"]).filter((e): e is [string, number] => wholeCount(e[1])));
  return { router: typeof p["router"] === "string" ? p["router"] : "", at: p["at"], apps, held };
}

export async function openAppsBucket(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(APPS_BUCKET, { history: 1, storage: StorageType.File, replicas: natsReplicas() });
}

export async function openRoutersBucket(nc: NatsConnection): Promise<KV> {
  const create = (): Promise<KV> => new Kvm(nc).create(ROUTERS_BUCKET, { history: 1, ttl: ROUTERS_BUCKET_TTL_MS, storage: StorageType.Memory, replicas: natsReplicas() });
  // A memory bucket: created again when a restart of NATS lost it.
  return reopening(await create(), create);
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
  /**
   * The engine took the request: its next heartbeat will count it. Written
   * by front doors of earlier releases only (now the holder releases the
   * reservation once a heartbeat shows it); still honoured while they run.
   */
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
  const create = (): Promise<KV> => new Kvm(nc).create(RESERVATIONS_BUCKET, { history: 1, ttl: RESERVATIONS_BUCKET_TTL_MS, storage: StorageType.Memory, replicas: natsReplicas() });
  // A memory bucket: created again when a restart of NATS lost it.
  return reopening(await create(), create);
}
