/**
 * @module The engine pod's one options schema, parsed once at start-up from
 * flags over environment variables over defaults: the engine's own options
 * (model, context, sequences, threads, GPU, KV policy — parsed by the
 * engine's `parseEngineOptions`), where the model comes from (`--model` path
 * or a generated `--model-preset`), the HTTP server's port and body limits,
 * which executor runs tool calls, and the pod's name.
 */
import {
  enumOpt,
  intOpt,
  optionalStringOpt,
  stringOpt,
  defaultSource,
  InterlaceError,
  SPECULATION_LIMITS,
  ErrorCode,
  type Source,
} from "../../common/src/index.js";
import { parseEngineOptions as parseEngineCoreOptions, type EngineOptions } from "./engine/index.js";
import { parseAdapterList, type AdapterOption } from "./engine/engine-options.js";
import { parseUpstreamOptions, type UpstreamOptions } from "./upstream/upstream-options.js";

/** `llama-cpp`: the model runs in this pod; `openai`: an upstream OpenAI-compatible server runs it. */
export const BACKENDS = ["llama-cpp", "openai"] as const;
export type Backend = (typeof BACKENDS)[number];

export const EXECUTOR_KINDS = ["in-process", "nats"] as const;
export type ExecutorKind = (typeof EXECUTOR_KINDS)[number];

export const MODEL_PRESETS = ["test", "bench"] as const;
export type ModelPresetName = (typeof MODEL_PRESETS)[number];

export interface ServerOptions {
  port: number;
  host: string;
  /** Largest request body accepted, bytes (larger → 413). */
  maxBodyBytes: number;
  /** Largest prompt accepted, UTF-8 bytes over all messages (larger → 413). */
  maxPromptBytes: number;
  /** `Retry-After` seconds sent with a 429 when every sequence is busy. */
  retryAfterSeconds: number;
  /** How long a Responses API response stays retrievable and continuable by `previous_response_id`, ms. */
  responseStoreTtlMs: number;
  /** Most Responses API responses stored at once. */
  maxStoredResponses: number;
  /**
   * On SIGTERM, how long live sessions may run on before they are cut with
   * "engine draining: grace period expired", ms. Keep it below the pod's
   * `terminationGracePeriodSeconds` (30 s unless set) less a few seconds.
   */
  drainGraceMs: number;
}

export interface ExecutorOptions {
  kind: ExecutorKind;
  /** NATS server URL(s), comma-separated; required with `--executor nats`. */
  natsUrl?: string;
  /** NATS only: the pool that runs tools whose spec names none (`--default-pool namespace/name`). */
  defaultPool?: { namespace: string; name: string };
  /**
   * NATS only: how long a call to a tool pool with no live runner (scaled to
   * zero, being woken) waits for one before failing with `no_runners`
   * (`--tool-runner-hold-ms`, default 60000, the router's cold-start hold; 0: fail at once).
   */
  runnerHoldMs: number;
}

export interface HeartbeatSettings {
  /** NATS server URL(s), comma-separated (`--nats-url`, shared with the NATS executor). */
  natsUrl: string;
  /** The EnginePool this pod serves (`--pool namespace/name`). */
  pool: { namespace: string; name: string };
  /** The URL routers reach this pod at; default `http://$POD_IP:<port>`, else the listen host. */
  advertiseUrl?: string;
  /** `POD_IP` from the downward API. */
  podIp?: string;
  intervalMs: number;
  /** How often the engine's KV events compare its blocks with the last event (`--kv-events-ms`; 0: no KV events). */
  kvEventsMs: number;
  /** How often the engine compares its free and reclaimable sequences with its last heartbeat's, beating at once on a rise (`--capacity-check-ms`; 0: only every `intervalMs`). */
  capacityCheckMs: number;
}

/** Speculative tool calls (`--draft-model`, `--max-draft-tokens`, the tool cache's bounds). */
export interface SpeculationPodOptions {
  /** A second GGUF loaded beside the main model: the draft model S. */
  draftModelPath?: string;
  /** LoRA adapters over the draft model (`--draft-adapters PATH[@SCALE],...`). */
  draftAdapters?: AdapterOption[];
  /** Most draft tokens proposed per O2 validation pass. */
  maxDraftTokens: number;
  /** The draft model's own CPU threads, beside the main model's `--threads`. */
  draftThreads: number;
  /** Tool-cache entry lifetime, ms (`cache-tool-output` entries may ask for less). */
  cacheTtlMs: number;
  /** Tool-cache entries per session. */
  cacheEntriesPerSession: number;
  /** Tool-cache output bytes over all sessions. */
  cacheMaxBytes: number;
  /** Largest single cached output, bytes (larger → 413). */
  maxCachedOutputBytes: number;
}

export interface EnginePodOptions {
  backend: Backend;
  /** Engine options; `modelPath` is empty when a preset is still to be generated (or with `--backend openai`). */
  engine: EngineOptions;
  /** `--backend openai` only: the upstream server. */
  upstream?: UpstreamOptions;
  /** Generate (or reuse) this model when no `--model` path is given. */
  modelPreset?: ModelPresetName;
  server: ServerOptions;
  executor: ExecutorOptions;
  speculation: SpeculationPodOptions;
  /** This pod's name: NATS interrupt subjects and heartbeats (`POD_NAME` from the downward API). */
  podName: string;
  /** This pod's namespace, its tenant on the NATS bus: `--pool`'s namespace, else `POD_NAMESPACE`, else `default`. */
  podNamespace: string;
  /** Heartbeats into the `interlace-engines` bucket, for the routers; absent without `--pool`. */
  heartbeat?: HeartbeatSettings;
  logLevel: string;
}

function invalid(message: string): InterlaceError {
  return new InterlaceError(ErrorCode.BadRequest, message);
}

/**
 * Reads every engine-pod flag: `--port` (8080), `--host`, `--model` or
 * `--model-preset test|bench`, the engine's `--context-size --sequences
 * --threads --gpu false|cuda|auto --kv-policy auto|keep|swap|recompute
 * --max-tokens --prefix-cache --swap-dir`, `--max-body-bytes`,
 * `--max-prompt-bytes`, `--retry-after-seconds`, `--drain-grace-ms` (25000), `--response-store-ttl-ms`,
 * `--max-stored-responses` (the Responses API's stored turns; the engine's
 * `--response-retention-ms --max-retained-responses` keep their KV), `--executor in-process|nats`,
 * `--nats-url`, `--default-pool ns/name`, `--tool-runner-hold-ms` (60000), `--pod-name`, `--pool ns/name`
 * (heartbeats for the routers), `--advertise-url`, `--heartbeat-ms`, `--log-level`,
 * `--backend llama-cpp|openai` with `--upstream-url --upstream-model
 * --upstream-timeout-ms --upstream-retries --upstream-api-key` (see
 * `upstream/upstream-options.ts`), and speculation's `--draft-model PATH
 * --max-draft-tokens N --draft-threads N --tool-cache-ttl-ms --tool-cache-entries
 * --tool-cache-max-bytes --max-cached-output-bytes`. Throws an
 * {@link InterlaceError} naming the flag and its environment variable.
 */
export function parseEnginePodOptions(src: Source = defaultSource()): EnginePodOptions {
  const engine = parseEngineCoreOptions(src);
  const backend = enumOpt(src, "backend", BACKENDS, "llama-cpp");
  const upstream = backend === "openai" ? parseUpstreamOptions(src) : undefined;
  if (backend !== "openai" && optionalStringOpt(src, "upstream-url") !== undefined) {
    throw invalid("--upstream-url (UPSTREAM_URL) needs --backend openai (BACKEND)");
  }
  const presetRaw = optionalStringOpt(src, "model-preset");
  let modelPreset: ModelPresetName | undefined;
  if (presetRaw !== undefined) modelPreset = enumOpt(src, "model-preset", MODEL_PRESETS, "test");
  if (engine.modelPath !== "" && modelPreset !== undefined) {
    throw invalid("give either --model (MODEL) or --model-preset (MODEL_PRESET), not both");
  }
  if (backend === "openai" && (engine.modelPath !== "" || modelPreset !== undefined)) {
    throw invalid("--backend openai runs no model in the pod: drop --model/--model-preset (the upstream serves --upstream-model)");
  }
  if (backend === "llama-cpp" && engine.modelPath === "" && modelPreset === undefined) {
    throw invalid("no model: give --model PATH (MODEL) or --model-preset test|bench (MODEL_PRESET)");
  }
  const maxBodyBytes = intOpt(src, "max-body-bytes", 1_048_576, { min: 1024, max: 256 * 1_048_576 });
  const server: ServerOptions = {
    port: intOpt(src, "port", 8080, { min: 0, max: 65535 }),
    host: stringOpt(src, "host", "0.0.0.0"),
    maxBodyBytes,
    maxPromptBytes: intOpt(src, "max-prompt-bytes", Math.min(maxBodyBytes, 262_144), { min: 1, max: maxBodyBytes }),
    retryAfterSeconds: intOpt(src, "retry-after-seconds", 1, { min: 1, max: 3600 }),
    responseStoreTtlMs: intOpt(src, "response-store-ttl-ms", 30 * 60_000, { min: 1000, max: 24 * 3_600_000 }),
    maxStoredResponses: intOpt(src, "max-stored-responses", 1024, { min: 1, max: 1_000_000 }),
    drainGraceMs: intOpt(src, "drain-grace-ms", 25_000, { min: 0, max: 3_600_000 }),
  };
  const kind = enumOpt(src, "executor", EXECUTOR_KINDS, "in-process");
  const natsUrl = optionalStringOpt(src, "nats-url");
  if (kind === "nats" && (natsUrl === undefined || natsUrl === "")) {
    throw invalid("--executor nats needs --nats-url (NATS_URL), e.g. nats://127.0.0.1:4222");
  }
  const poolRaw = optionalStringOpt(src, "default-pool");
  let defaultPool: ExecutorOptions["defaultPool"];
  if (poolRaw !== undefined) {
    const m = /^([a-z0-9][a-z0-9-]{0,62})\/([a-z0-9][a-z0-9-]{0,62})$/.exec(poolRaw);
    if (m === null) throw invalid(`invalid --default-pool (DEFAULT_POOL): expected namespace/name, got "${poolRaw}"`);
    if (kind !== "nats") throw invalid("--default-pool (DEFAULT_POOL) needs --executor nats");
    defaultPool = { namespace: m[1]!, name: m[2]! };
  }
  const executor: ExecutorOptions = {
    kind,
    runnerHoldMs: intOpt(src, "tool-runner-hold-ms", 60_000, { min: 0, max: 600_000 }),
    ...(natsUrl !== undefined ? { natsUrl } : {}),
    ...(defaultPool !== undefined ? { defaultPool } : {}),
  };
  const draftModelPath = optionalStringOpt(src, "draft-model");
  if (draftModelPath === "") throw invalid("--draft-model (DRAFT_MODEL) must be a GGUF path when given");
  const draftAdaptersRaw = optionalStringOpt(src, "draft-adapters");
  if (draftAdaptersRaw !== undefined && draftModelPath === undefined) throw invalid("--draft-adapters (DRAFT_ADAPTERS) needs --draft-model (DRAFT_MODEL)");
  const draftAdapters = draftAdaptersRaw !== undefined ? parseAdapterList(draftAdaptersRaw, "draft-adapters") : undefined;
  const L = SPECULATION_LIMITS;
  const maxCachedOutputBytes = intOpt(src, "max-cached-output-bytes", Math.min(maxBodyBytes, L.maxCachedOutputBytes.default), { min: L.maxCachedOutputBytes.min, max: maxBodyBytes });
  const speculation: SpeculationPodOptions = {
    ...(draftModelPath !== undefined ? { draftModelPath } : {}),
    ...(draftAdapters !== undefined && draftAdapters.length > 0 ? { draftAdapters } : {}),
    maxDraftTokens: intOpt(src, "max-draft-tokens", L.maxDraftTokens.default, { min: L.maxDraftTokens.min, max: L.maxDraftTokens.max }),
    draftThreads: intOpt(src, "draft-threads", L.draftThreads.default, { min: L.draftThreads.min, max: L.draftThreads.max }),
    cacheTtlMs: intOpt(src, "tool-cache-ttl-ms", L.toolCacheTtlSeconds.default * 1000, { min: 1, max: L.toolCacheTtlSeconds.max * 1000 }),
    cacheEntriesPerSession: intOpt(src, "tool-cache-entries", L.toolCacheEntries.default, { min: L.toolCacheEntries.min, max: L.toolCacheEntries.max }),
    cacheMaxBytes: intOpt(src, "tool-cache-max-bytes", L.toolCacheMaxBytes.default, { min: maxCachedOutputBytes, max: L.toolCacheMaxBytes.max }),
    maxCachedOutputBytes,
  };
  // The host name is only a default: made subject-safe (dots and other characters → "-").
  const hostName = (src.env["HOSTNAME"] ?? "").replace(/[^a-zA-Z0-9_-]/g, "-").slice(0, 63);
  const podName = stringOpt(src, "pod-name", hostName === "" ? "engine-local" : hostName);
  if (!/^[a-zA-Z0-9_-]{1,63}$/.test(podName)) {
    throw invalid(`invalid --pod-name (POD_NAME): "${podName}" must be 1-63 characters of [a-zA-Z0-9_-] (it is a NATS subject token)`);
  }
  const heartbeat = parseHeartbeat(src, natsUrl);
  const envNamespace = src.env["POD_NAMESPACE"];
  const podNamespace = heartbeat?.pool.namespace ?? (envNamespace !== undefined && envNamespace !== "" ? envNamespace : "default");
  return {
    backend,
    engine,
    ...(upstream !== undefined ? { upstream } : {}),
    ...(modelPreset !== undefined ? { modelPreset } : {}),
    server,
    executor,
    speculation,
    podName,
    podNamespace,
    ...(heartbeat !== undefined ? { heartbeat } : {}),
    logLevel: stringOpt(src, "log-level", "info"),
  };
}

const POOL_REF = /^([a-z0-9][a-z0-9-]{0,62})\/([a-z0-9][a-z0-9-]{0,62})$/;

/** `--pool ns/name` turns heartbeats and KV events on (they need `--nats-url`); `--advertise-url`, `--heartbeat-ms`, `--kv-events-ms` (100; 0: off), `--capacity-check-ms` (20; 0: off). */
function parseHeartbeat(src: Source, natsUrl: string | undefined): HeartbeatSettings | undefined {
  const poolRaw = optionalStringOpt(src, "pool");
  if (poolRaw === undefined || poolRaw === "") return undefined;
  const m = POOL_REF.exec(poolRaw);
  if (m === null) throw invalid(`invalid --pool (POOL): expected namespace/name, got "${poolRaw}"`);
  if (natsUrl === undefined || natsUrl === "") throw invalid("--pool (POOL) publishes heartbeats over NATS: give --nats-url (NATS_URL) too");
  const advertise = optionalStringOpt(src, "advertise-url");
  if (advertise !== undefined && !/^https?:\/\/[^/]+$/.test(advertise)) {
    throw invalid(`invalid --advertise-url (ADVERTISE_URL): expected http://host:port, got "${advertise}"`);
  }
  const podIp = src.env["POD_IP"];
  return {
    natsUrl,
    pool: { namespace: m[1]!, name: m[2]! },
    ...(advertise !== undefined ? { advertiseUrl: advertise } : {}),
    ...(podIp !== undefined && podIp !== "" ? { podIp } : {}),
    intervalMs: intOpt(src, "heartbeat-ms", 1000, { min: 100, max: 60_000 }),
    kvEventsMs: intOpt(src, "kv-events-ms", 100, { min: 0, max: 60_000 }),
    capacityCheckMs: intOpt(src, "capacity-check-ms", 20, { min: 0, max: 60_000 }),
  };
}

/** The name the issue gives this parser. */
export const parseEngineOptions = parseEnginePodOptions;
