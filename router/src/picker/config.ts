/**
 * @module The picker's one options schema, parsed once at start-up from
 * flags over environment variables over defaults (common/config). The
 * placement settings mean what the router's mean, with the router's
 * defaults, so both front doors place alike.
 */
import { defaultSource, enumOpt, ErrorCode, intOpt, InterlaceError, optionalStringOpt, parseArgv, stringOpt, type Source } from "../../../common/src/index.js";
import { parsePrefixWarmOptions, routerSecurityFromEnv, type PrefixWarmOptions, type RouterSecurity } from "../config.js";
import { DEFAULT_PREFIX_SLACK, PLACEMENT_POLICIES, type PlacementPolicy } from "../placement.js";
import { PREFIX_INDEXES, type PrefixIndexKind } from "../prefix-index.js";

export interface PickerOptions extends PrefixWarmOptions {
  /** gRPC port of the ext_proc and health services (GAIE's default: 9002). */
  grpcPort: number;
  /** HTTP port of `/healthz`, `/readyz` and `/metrics`. */
  port: number;
  host: string;
  /** Where prefix matches come from: the engines' KV events (as the router) or their heartbeats alone. */
  prefixIndex: PrefixIndexKind;
  natsUrl: string;
  /** The EnginePool this picker serves (the InferencePool's pods). */
  pool: { namespace: string; name: string };
  placement: PlacementPolicy;
  loadFactor: number;
  /** Placement's prefix slack, as the router's `--prefix-slack`. */
  prefixSlack: number;
  /** Apps' home engines, as the router's `--app-homes` (from this picker's own arrivals: picker replicas do not share them). */
  appHomes: boolean;
  engineTtlMs: number;
  prefixWaitMs: number;
  retryAfterSeconds: number;
  /** Largest request body the picker buffers, bytes (→ 413). */
  maxBodyBytes: number;
  /**
   * Endpoints in the fallback list it returns (1: only the chosen engine).
   * Envoy's `ORIGINAL_DST` cluster, which GAIE's reference data-plane
   * configuration routes with, reads one address and finds no host in a
   * list; raise it only for a data plane that walks the list (Envoy's
   * override-host load balancer).
   */
  maxEndpoints: number;
  /** On SIGTERM: how long readiness reports NOT_SERVING before the server stops taking streams (the data plane's health checks notice meanwhile). */
  drainMs: number;
  /** Then how long open streams (responses still streaming through) may take to finish. */
  shutdownGraceMs: number;
  logLevel: string;
  /** Absent: everything open (tests, laptops). */
  security?: RouterSecurity;
}

function invalid(message: string): InterlaceError {
  return new InterlaceError(ErrorCode.BadRequest, message);
}

/**
 * Reads `--grpc-port` (9002), `--port` (9090), `--host`, `--nats-url`
 * (required), `--pool ns/name` (required), `--placement`, `--prefix-index
 * heartbeat|events` (events, as the router), `--load-factor`
 * (percent, 125), `--prefix-slack` (2), `--app-homes on|off` (on), `--engine-ttl-ms` (3000), `--prefix-wait-ms` (1000),
 * `--prefix-warm-sessions` (3; 0: off), `--prefix-warm-window-ms` (20000), `--prefix-warm-min-free` (50),
 * `--retry-after-seconds` (1), `--max-body-bytes` (1 MiB),
 * `--max-endpoints` (1), `--drain-ms` (2000), `--shutdown-grace-ms`
 * (30000), `--log-level`.
 */
export function parsePickerOptions(src: Source = defaultSource()): PickerOptions {
  const natsUrl = optionalStringOpt(src, "nats-url");
  if (natsUrl === undefined || natsUrl === "") throw invalid("--nats-url (NATS_URL) is required: the picker reads engine heartbeats and app configs from NATS");
  const pool = optionalStringOpt(src, "pool") ?? "";
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)$/.exec(pool);
  if (m === null) throw invalid(`--pool (POOL) must name the EnginePool as <namespace>/<name>, got "${pool}"`);
  return {
    grpcPort: intOpt(src, "grpc-port", 9002, { min: 0, max: 65535 }),
    port: intOpt(src, "port", 9090, { min: 0, max: 65535 }),
    host: stringOpt(src, "host", "0.0.0.0"),
    natsUrl,
    pool: { namespace: m[1]!, name: m[3]! },
    placement: enumOpt(src, "placement", PLACEMENT_POLICIES, "prefix-affinity"),
    prefixIndex: enumOpt(src, "prefix-index", PREFIX_INDEXES, "events"),
    loadFactor: intOpt(src, "load-factor", 125, { min: 100, max: 1000 }) / 100,
    prefixSlack: intOpt(src, "prefix-slack", DEFAULT_PREFIX_SLACK, { min: 0, max: 10_000 }),
    appHomes: enumOpt(src, "app-homes", ["on", "off"] as const, "on") === "on",
    engineTtlMs: intOpt(src, "engine-ttl-ms", 3000, { min: 500, max: 60_000 }),
    prefixWaitMs: intOpt(src, "prefix-wait-ms", 1000, { min: 0, max: 600_000 }),
    ...parsePrefixWarmOptions(src),
    retryAfterSeconds: intOpt(src, "retry-after-seconds", 1, { min: 1, max: 3600 }),
    maxBodyBytes: intOpt(src, "max-body-bytes", 1_048_576, { min: 1024, max: 256 * 1_048_576 }),
    maxEndpoints: intOpt(src, "max-endpoints", 1, { min: 1, max: 64 }),
    drainMs: intOpt(src, "drain-ms", 2000, { min: 0, max: 120_000 }),
    shutdownGraceMs: intOpt(src, "shutdown-grace-ms", 30_000, { min: 0, max: 3_600_000 }),
    logLevel: stringOpt(src, "log-level", "info"),
    security: routerSecurityFromEnv(src.env),
  };
}

/** Options for a picker built in code (tests, benches): every default, loopback, free ports, no credentials, `overrides` on top. */
export function pickerOptions(overrides: Partial<PickerOptions> & Pick<PickerOptions, "natsUrl" | "pool">): PickerOptions {
  const { security: _fromEnv, ...defaults } = parsePickerOptions({
    flags: parseArgv(["--pool", `${overrides.pool.namespace}/${overrides.pool.name}`]),
    env: { NATS_URL: overrides.natsUrl },
  });
  return { ...defaults, grpcPort: 0, port: 0, host: "127.0.0.1", drainMs: 0, ...overrides };
}
