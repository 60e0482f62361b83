/**
 * @module The router's one options schema, parsed once at start-up from
 * flags over environment variables over defaults (common/config).
 */
import { defaultSource, enumOpt, parseArgv, ErrorCode, intOpt, InterlaceError, optionalStringOpt, stringOpt, type Source } from "../../common/src/index.js";
import { DEFAULT_PREFIX_SLACK, PLACEMENT_POLICIES, type PlacementPolicy } from "./placement.js";
import { PREFIX_INDEXES, type PrefixIndexKind } from "./prefix-index.js";
import type { WarmSettings } from "./prefix-warming.js";
import { apiKeysFromEnv, type ApiKeys } from "../../common/src/security/http-auth.js";
import { natsSecurityFromEnv, type NatsSecurity } from "../../common/src/security/nats-connect.js";
import { readKeyFile, readKeyRing, requireCredentials } from "../../common/src/security/credential-files.js";
import type { KeyRingSource } from "../../common/src/security/key-ring.js";

/** The router's credentials (all from its Secrets, through the environment). */
export interface RouterSecurity {
  /** Clients' API keys (`INTERLACE_API_KEYS_FILE` / `INTERLACE_API_KEYS`); null: no authentication (a laptop). */
  apiKeys: ApiKeys | null;
  /**
   * Signs session-owner tags (`INTERLACE_OWNER_TAG_KEY_FILE`): the router's own
   * key, never copied into an app namespace (an endpoint picker there gets
   * its namespace's derived key instead). From the files: a ring read again
   * in place, so a rotation's new key and grace window reach running routers.
   */
  ownerTagKey?: string | KeyRingSource;
  /**
   * The router's bearer token towards engines (`INTERLACE_ENGINE_API_KEY_FILE`):
   * from the files, a ring read again in place; the router presents the
   * previous key while its window lasts (key-ring.ts `presentedKey`).
   */
  engineApiKey?: string | KeyRingSource;
  /** NATS credentials and CA (`INTERLACE_NATS_CREDS`, `INTERLACE_NATS_CA`). */
  nats: NatsSecurity;
}

export interface RouterOptions {
  port: number;
  host: string;
  /** NATS server URL(s), comma-separated: app configs, engine heartbeats, router presence. */
  natsUrl: string;
  /** This replica's name (presence key, logs); defaults to the host name. */
  routerId: string;
  placement: PlacementPolicy;
  /** Where placement learns which blocks each engine holds: its heartbeats, or its KV events (heartbeats as the fallback). */
  prefixIndex: PrefixIndexKind;
  /** CHWBL load factor c: no engine takes a session that would put it above c x the pool's mean load. */
  loadFactor: number;
  /** Sessions past the pool's even share the engines holding a request's longest prefix may take when all are over the bound (placement.ts). */
  prefixSlack: number;
  /**
   * Prefix affinity: give each active app a home engine (app-homes.ts),
   * where its prefix misses are seeded and whose prefix store keeps its
   * prefix before replicas; off: a miss goes to the least loaded engine on
   * the app's ring, and every engine's store is plain LRU.
   */
  appHomes: boolean;
  /** An engine whose heartbeat this router has not seen refreshed for this long is dropped. */
  engineTtlMs: number;
  /** Largest request body, bytes (→ 413). */
  maxBodyBytes: number;
  /** `Retry-After` seconds when no engine can take a session (429) or a pool has none ready (503). */
  retryAfterSeconds: number;
  /**
   * Prefix affinity: how long a session may wait for the engine holding its
   * prefix when that engine is full (within the load bound or past it), before it
   * spills to another (0: never waits). About one cold prefill of the apps'
   * shared prompt on the pool's hardware is the break-even.
   */
  prefixWaitMs: number;
  /**
   * Hot-prefix warming (prefix-warming.ts): an app with at least this many
   * sessions placed in the last `prefixWarmWindowMs`, whose shared prefix
   * one engine holds alone, gets it prefilled into an idle engine's prefix
   * store before a burst spills to it (0: off).
   */
  prefixWarmSessions: number;
  prefixWarmWindowMs: number;
  /** Percent of an engine's sequences that must be free (and nothing prefilling) for it to be warmed. */
  prefixWarmMinFreePercent: number;
  /**
   * Cold starts: how long a request may wait for its pool's first ready
   * engine (scaled to zero, or starting) before a 503 (0: no hold, 503 at once).
   */
  coldStartHoldMs: number;
  /** Cold starts: most requests held at once per EnginePool; beyond, 503 at once (0: no hold). */
  coldStartMaxHeld: number;
  /**
   * Every engine of the pool full: how long a request may wait in the
   * router's queue for a free sequence, in arrival order, before a 429
   * (0, the default: no queue, 429 at once; capacity-queue.ts). Off by
   * default: under overload, measured, clients retrying on 429 waited less.
   */
  queueMs: number;
  /** Every engine full: most requests queued at once per EnginePool; beyond, 429 at once (0: no queue). */
  maxQueued: number;
  /** How long one engine may take to accept or refuse a session before the next is tried. */
  upstreamTimeoutMs: number;
  /** How often this router rewrites its presence (apps served, live sessions). */
  presenceMs: number;
  /** Largest value of one program variable, bytes (→ 413). */
  maxVariableBytes: number;
  /** Most calls in one program (→ 413). */
  maxProgramCalls: number;
  /** Programs a router runs or keeps at once (→ 429 beyond). */
  maxPrograms: number;
  /** How long a finished program's values stay readable. */
  programKeepMs: number;
  /** How long a program request keeps waiting while every engine is full before its call fails. */
  programQueueTimeoutMs: number;
  /** The batch cap (`maxBatch`) an engine gets with a program request deduced `latency`. */
  programLatencyBatch: number;
  /** Deduce program requests' objectives from the DAG (Parrot §5.2); off, every request is latency-critical on its own (the baseline). */
  programDeduction: boolean;
  /** A program whose running replica has not renewed its lease for this long is taken over by another replica. */
  programLeaseMs: number;
  logLevel: string;
  /** Absent: everything open (tests, laptops). */
  security?: RouterSecurity;
}

/** The program settings' defaults (what the flags default to). */
const DEFAULT_PROGRAM_OPTIONS = {
  maxVariableBytes: 262_144,
  maxProgramCalls: 256,
  maxPrograms: 1000,
  programKeepMs: 600_000,
  programQueueTimeoutMs: 120_000,
  programLatencyBatch: 4,
  programDeduction: true,
  programLeaseMs: 10_000,
} as const satisfies Partial<RouterOptions>;

/**
 * Options for a router built in code (the local stack, tests, benches): every
 * flag's default, bound to loopback on a free port, without credentials, with
 * `overrides` on top — so a new option needs no edit where routers are built.
 */
export function routerOptions(overrides: Partial<RouterOptions> & Pick<RouterOptions, "natsUrl">): RouterOptions {
  const { security: _fromEnv, ...defaults } = parseRouterOptions({ flags: parseArgv([]), env: { NATS_URL: overrides.natsUrl } });
  return { ...defaults, port: 0, host: "127.0.0.1", routerId: "router-0", ...overrides };
}

function invalid(message: string): InterlaceError {
  return new InterlaceError(ErrorCode.BadRequest, message);
}

/**
 * Reads `--port` (8080), `--host`, `--nats-url` (required), `--router-id`,
 * `--placement prefix-affinity|least-loaded|round-robin`,
 * `--prefix-index heartbeat|events` (events), `--load-factor`
 * (percent, 125), `--prefix-slack` (sessions, 2), `--app-homes on|off` (on), `--engine-ttl-ms` (3000), `--max-body-bytes`,
 * `--retry-after-seconds`, `--upstream-timeout-ms`, `--prefix-wait-ms` (1000),
 * `--prefix-warm-sessions` (3; 0 turns warming off), `--prefix-warm-window-ms` (20000),
 * `--prefix-warm-min-free` (percent, 50),
 * `--cold-start-hold-ms` (60000), `--cold-start-max-held` (100),
 * `--queue-ms` (30000; 0: off), `--max-queued` (100), `--presence-ms`,
 * `--max-variable-bytes` (262144), `--max-program-calls` (256),
 * `--max-programs` (1000), `--program-keep-ms` (600000),
 * `--program-queue-timeout-ms` (120000), `--program-latency-batch` (4),
 * `--program-deduction on|off` (on), `--program-lease-ms` (10000), `--log-level`.
 */
export function parseRouterOptions(src: Source = defaultSource()): RouterOptions {
  const natsUrl = optionalStringOpt(src, "nats-url");
  if (natsUrl === undefined || natsUrl === "") throw invalid("--nats-url (NATS_URL) is required: the router reads app configs and engine heartbeats from NATS");
  const hostName = (src.env["HOSTNAME"] ?? "").replace(/[^a-zA-Z0-9_-]/g, "-").slice(0, 63);
  const routerId = stringOpt(src, "router-id", hostName === "" ? `router-${process.pid}` : hostName);
  if (!/^[a-zA-Z0-9_-]{1,63}$/.test(routerId)) throw invalid(`invalid --router-id (ROUTER_ID): "${routerId}" must be 1-63 characters of [a-zA-Z0-9_-]`);
  return {
    port: intOpt(src, "port", 8080, { min: 0, max: 65535 }),
    host: stringOpt(src, "host", "0.0.0.0"),
    natsUrl,
    routerId,
    placement: enumOpt(src, "placement", PLACEMENT_POLICIES, "prefix-affinity"),
    prefixIndex: enumOpt(src, "prefix-index", PREFIX_INDEXES, "events"),
    loadFactor: intOpt(src, "load-factor", 125, { min: 100, max: 1000 }) / 100,
    prefixSlack: intOpt(src, "prefix-slack", DEFAULT_PREFIX_SLACK, { min: 0, max: 10_000 }),
    appHomes: enumOpt(src, "app-homes", ["on", "off"] as const, "on") === "on",
    engineTtlMs: intOpt(src, "engine-ttl-ms", 3000, { min: 500, max: 60_000 }),
    maxBodyBytes: intOpt(src, "max-body-bytes", 1_048_576, { min: 1024, max: 256 * 1_048_576 }),
    retryAfterSeconds: intOpt(src, "retry-after-seconds", 1, { min: 1, max: 3600 }),
    upstreamTimeoutMs: intOpt(src, "upstream-timeout-ms", 10_000, { min: 100, max: 600_000 }),
    prefixWaitMs: intOpt(src, "prefix-wait-ms", 1000, { min: 0, max: 600_000 }),
    ...parsePrefixWarmOptions(src),
    coldStartHoldMs: intOpt(src, "cold-start-hold-ms", 60_000, { min: 0, max: 600_000 }),
    coldStartMaxHeld: intOpt(src, "cold-start-max-held", 100, { min: 0, max: 100_000 }),
    queueMs: intOpt(src, "queue-ms", 30_000, { min: 0, max: 600_000 }),
    maxQueued: intOpt(src, "max-queued", 100, { min: 0, max: 100_000 }),
    presenceMs: intOpt(src, "presence-ms", 2000, { min: 100, max: 60_000 }),
    maxVariableBytes: intOpt(src, "max-variable-bytes", DEFAULT_PROGRAM_OPTIONS.maxVariableBytes, { min: 1, max: 64 * 1_048_576 }),
    maxProgramCalls: intOpt(src, "max-program-calls", DEFAULT_PROGRAM_OPTIONS.maxProgramCalls, { min: 1, max: 10_000 }),
    maxPrograms: intOpt(src, "max-programs", DEFAULT_PROGRAM_OPTIONS.maxPrograms, { min: 1, max: 1_000_000 }),
    programKeepMs: intOpt(src, "program-keep-ms", DEFAULT_PROGRAM_OPTIONS.programKeepMs, { min: 1000, max: 86_400_000 }),
    programQueueTimeoutMs: intOpt(src, "program-queue-timeout-ms", DEFAULT_PROGRAM_OPTIONS.programQueueTimeoutMs, { min: 100, max: 3_600_000 }),
    programLatencyBatch: intOpt(src, "program-latency-batch", DEFAULT_PROGRAM_OPTIONS.programLatencyBatch, { min: 1, max: 4096 }),
    programDeduction: enumOpt(src, "program-deduction", ["on", "off"] as const, DEFAULT_PROGRAM_OPTIONS.programDeduction ? "on" : "off") === "on",
    programLeaseMs: intOpt(src, "program-lease-ms", DEFAULT_PROGRAM_OPTIONS.programLeaseMs, { min: 300, max: 600_000 }),
    logLevel: stringOpt(src, "log-level", "info"),
    security: routerSecurityFromEnv(src.env),
  };
}

/**
 * Reads {@link RouterSecurity} from the files the environment names (empty
 * values count as unset). With `INTERLACE_AUTH=required` a missing NATS
 * credential, owner-tag key or engine key throws, naming the file.
 */
export function routerSecurityFromEnv(env: NodeJS.ProcessEnv): RouterSecurity {
  requireCredentials(["NatsCreds", "OwnerTagKey", "EngineApiKey"], env);
  const ownerTagKey = readKeyRing("OwnerTagKey", env);
  const engineApiKey = readKeyRing("EngineApiKey", env);
  return {
    apiKeys: apiKeysFromEnv(env),
    ...(ownerTagKey !== undefined ? { ownerTagKey } : {}),
    ...(engineApiKey !== undefined ? { engineApiKey } : {}),
    nats: natsSecurityFromEnv(env),
  };
}

/** Hot-prefix warming's flags, which both front doors take (the router and the endpoint picker). */
export type PrefixWarmOptions = Pick<RouterOptions, "prefixWarmSessions" | "prefixWarmWindowMs" | "prefixWarmMinFreePercent">;

/** `--prefix-warm-sessions` (3; 0: off), `--prefix-warm-window-ms` (20000), `--prefix-warm-min-free` (percent, 50). */
export function parsePrefixWarmOptions(src: Source): PrefixWarmOptions {
  return {
    prefixWarmSessions: intOpt(src, "prefix-warm-sessions", 3, { min: 0, max: 10_000 }),
    prefixWarmWindowMs: intOpt(src, "prefix-warm-window-ms", 20_000, { min: 100, max: 3_600_000 }),
    prefixWarmMinFreePercent: intOpt(src, "prefix-warm-min-free", 50, { min: 0, max: 100 }),
  };
}

/** The warm decision's settings: off unless placement keeps an app on the engine holding its prefix (warming a second one only makes sense there). */
export function warmSettings(placement: PlacementPolicy, o: PrefixWarmOptions): WarmSettings {
  return { sessions: placement === "prefix-affinity" ? o.prefixWarmSessions : 0, windowMs: o.prefixWarmWindowMs, minFreeShare: o.prefixWarmMinFreePercent / 100 };
}
