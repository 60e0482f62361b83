/**
 * @module The engine pod's entrypoint (`npm run engine -- --model-preset test`):
 * parse the options, start the HTTP server (so `/healthz` answers while the
 * model loads), generate or locate the model, connect the executor selected
 * by `--executor` (and, with a NATS URL, the engines' shared Responses
 * store), load the engine, and serve until SIGTERM/SIGINT; then
 * drain (heartbeats and `/readyz` say draining, new sessions get 503, live
 * ones finish within `--drain-grace-ms` or are cut with the reason), stop
 * accepting, close the engine and the executor.
 */
import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import { createLogger, InterlaceError, Shutdown, type Logger, type ToolSpec } from "../../common/src/index.js";
import { createBuiltinTools } from "../../common/src/builtin-tools/index.js";
import { parseEnginePodOptions, type EnginePodOptions } from "./config.js";
import { createEngine, InterruptInbox, loadRuntime, type Engine } from "./engine/index.js";
import { InProcessExecutor, type Executor } from "./executor/index.js";
import { HeartbeatPublisher, KvEventPublisher } from "./heartbeat/index.js";
import { EngineMetrics } from "./metrics/index.js";
import { ensureModel } from "./model/index.js";
import { SharedCostModels } from "./kv/index.js";
import { openCostModelsBucket } from "../../common/src/protocol/index.js";
import { EngineServer, type DrainOutcome, type ResponseStore, type ToolCatalog } from "./server/index.js";
import { apiKeysFromEnv } from "../../common/src/security/http-auth.js";
import { connectNats, natsSecurityFromEnv } from "../../common/src/security/nats-connect.js";
import { readKeyRing, requireCredentials } from "../../common/src/security/credential-files.js";
import type { NatsConnection } from "@nats-io/transport-node";
import { UpstreamEngine } from "./upstream/index.js";
import { registerSpeculationMetrics } from "./metrics/speculation-metrics.js";
import { createSpeculationHook, DraftModel, SpeculationStats, SpeculativeExecutor, ToolCache, withSpeculation } from "./speculation/index.js";

/** A started engine pod, for tests and the demo that run it in-process. */
export interface EnginePod {
  server: EngineServer;
  engine: Engine;
  executor: Executor;
  /** The per-session tool cache (speculation and `cache-tool-output`). */
  toolCache: ToolCache;
  /** The draft model, when `--draft-model` was given. */
  draft?: DraftModel;
  speculationStats: SpeculationStats;
  port: number;
  /**
   * Stops taking new work and lets live sessions finish (heartbeats say
   * draining so routers place elsewhere), cutting those past `graceMs`
   * (default `--drain-grace-ms`) with the reason. Call {@link close} after.
   */
  drain(graceMs?: number): Promise<DrainOutcome>;
  /** Stops accepting, cancels sessions, closes the engine and the executor (idempotent). */
  close(): Promise<void>;
}

interface ExecutorChoice {
  executor: Executor;
  catalog: ToolCatalog;
  /** The NATS executor's connection, which the pod's heartbeats share (the executor closes it). */
  nats?: NatsConnection;
}

/** `inbox`: the engine's inbox, where user/agent interrupts arriving over NATS go. */
async function createExecutor(options: EnginePodOptions, log: Logger, metrics: EngineMetrics, inbox: InterruptInbox): Promise<ExecutorChoice> {
  if (options.executor.kind === "in-process") {
    const tools = createBuiltinTools();
    const builtins = new Map<string, ToolSpec>([...tools].map(([name, tool]) => [name, tool.spec]));
    return { executor: new InProcessExecutor({ tools, log: log.child({ subsystem: "executor" }) }), catalog: { builtins, pools: false } };
  }
  // Loaded only when selected, so in-process pods never load the NATS client.
  const { NatsExecutor } = await import("./executor/nats-executor.js");
  const interruptKey = readKeyRing("InterruptKey");
  const defaultPool = options.executor.defaultPool;
  const executor = await NatsExecutor.connect({
    servers: options.executor.natsUrl!.split(","),
    namespace: options.podNamespace,
    enginePod: options.podName,
    // Credentials, CA and the namespace's interrupt keys are files of the pod's Secret (credential-files.ts).
    security: natsSecurityFromEnv(),
    // A ring read again from its files: a rotation reaches this pod, and its live sessions, without a restart.
    ...(interruptKey !== undefined ? { interruptKey } : {}),
    registry: metrics.registry,
    log,
    inbox,
    runnerHoldMs: options.executor.runnerHoldMs,
    ...(defaultPool !== undefined ? { defaultPool } : {}),
  });
  return {
    executor,
    catalog: { builtins: new Map(), pools: true, namespace: options.podNamespace, ...(defaultPool !== undefined ? { defaultPool: `${defaultPool.namespace}/${defaultPool.name}` } : {}) },
    nats: executor.nc,
  };
}

/** The namespace's shared KV cost models (best effort: without the bucket the engine calibrates, as without NATS). */
async function sharedCostModels(nc: NatsConnection, namespace: string, log: Logger): Promise<SharedCostModels | undefined> {
  try {
    return new SharedCostModels(await openCostModelsBucket(nc), namespace);
  } catch (err) {
    log.warn({ err }, "shared kv cost models unavailable; this engine calibrates on its own");
    return undefined;
  }
}

/** Starts an engine pod from parsed options (HTTP server, executor, model, engine). */
export async function startEnginePod(options: EnginePodOptions, log: Logger): Promise<EnginePod> {
  // Fail closed (INTERLACE_AUTH=required): no credential, no start — never an open engine.
  requireCredentials(["ApiKeysFile", ...(options.executor.kind === "in-process" ? [] : (["NatsCreds", "InterruptKey"] as const))]);
  const metrics = new EngineMetrics();
  const started: { name: string; close: () => Promise<void> }[] = [];
  const closeAll = async (): Promise<void> => {
    for (const { name, close } of started.reverse()) {
      try {
        await close();
      } catch (err) {
        log.warn({ err, closer: name }, "closer failed during shutdown");
      }
    }
    started.length = 0;
  };
  try {
    const inbox = new InterruptInbox();
    const { executor, catalog, nats } = await createExecutor(options, log, metrics, inbox);
    started.push({ name: "executor", close: () => executor.close() });
    // One NATS connection per pod: the executor's when it has one, else one for the heartbeats and the Responses store.
    let nc = nats;
    const natsUrl = options.executor.natsUrl ?? options.heartbeat?.natsUrl;
    if (nc === undefined && natsUrl !== undefined) {
      const own = await connectNats({ servers: natsUrl, name: `interlace-engine-${options.podName}`, security: natsSecurityFromEnv() });
      started.push({ name: "nats", close: () => own.drain().catch(() => undefined) });
      nc = own;
    }
    // Keys under the pool's namespace, the only ones its NATS identity may touch.
    const responseStore = nc !== undefined ? await openSharedResponseStore(nc, { ttlMs: options.server.responseStoreTtlMs, namespace: options.heartbeat?.pool.namespace ?? "default" }) : undefined;

    const spec = options.speculation;
    const toolCache = new ToolCache({ ttlMs: spec.cacheTtlMs, maxEntriesPerSession: spec.cacheEntriesPerSession, maxBytes: spec.cacheMaxBytes });
    const speculationStats = new SpeculationStats();
    let draft: DraftModel | undefined;
    registerSpeculationMetrics(metrics.registry, () => ({ cache: toolCache.stats(), stats: speculationStats, draftModel: draft?.modelPath ?? null }));
    const server = new EngineServer({
      catalog,
      toolCache,
      limits: { ...options.server, maxCachedOutputBytes: spec.maxCachedOutputBytes },
      metrics,
      log: log.child({ subsystem: "http" }),
      // INTERLACE_API_KEYS_FILE / INTERLACE_API_KEYS (the chart's API key Secret); unset: no authentication.
      apiKeys: apiKeysFromEnv(),
      ...(responseStore !== undefined ? { responseStore } : {}),
    });
    const port = await server.listen(options.server.port, options.server.host);
    started.push({ name: "http", close: () => server.close() });
    log.info({ port, executor: options.executor.kind, backend: options.backend }, options.backend === "openai" ? "listening" : "listening; loading model");

    if (options.backend === "openai") {
      const upstream = options.upstream!;
      const engine = new UpstreamEngine(
        { upstream, maxSessions: options.engine.sequences, maxTokens: options.engine.maxTokens, contextSize: options.engine.contextSize, registry: metrics.registry },
        executor,
        log.child({ subsystem: "engine", backend: "openai" }),
      );
      inbox.open((sessionId, input) => engine.interrupt(sessionId, input));
      started.push({ name: "engine", close: async () => (await server.close(), inbox.close(), await engine.close()) });
      server.setEngine(engine);
      log.info({ backend: "openai", upstream: upstream.url, model: upstream.model, sessions: options.engine.sequences }, "engine ready (upstream backend)");
      let closing: Promise<void> | undefined;
      const drain = (graceMs = options.server.drainGraceMs): Promise<DrainOutcome> => server.drain(graceMs);
      return { server, engine, executor, toolCache, speculationStats, port, drain, close: () => (closing ??= closeAll()) };
    }
    let modelPath = options.engine.modelPath;
    if (modelPath === "" && options.modelPreset !== undefined) {
      const t0 = performance.now();
      modelPath = await ensureModel({ preset: options.modelPreset });
      log.info({ preset: options.modelPreset, modelPath, ms: Math.round(performance.now() - t0) }, "model ready");
    }
    const t0 = performance.now();
    // Loaded here so the draft model can share its llama.cpp instance (one backend, one thread setting).
    const runtime = await loadRuntime({ ...options.engine, modelPath }, log.child({ subsystem: "engine" }));
    // Calls go through the speculation layer: a session's call first asks its speculator (tool cache).
    const speculative = new SpeculativeExecutor(executor);
    // Keys under the pool's namespace, as the Responses store's.
    const costModels = nc !== undefined ? await sharedCostModels(nc, options.heartbeat?.pool.namespace ?? "default", log) : undefined;
    const core = await createEngine({ ...options.engine, modelPath }, speculative, log.child({ subsystem: "engine" }), {
      inbox,
      ...(costModels !== undefined ? { sharedCostModels: costModels } : {}),
      runtime,
      speculation: createSpeculationHook(speculative, spec.maxDraftTokens),
    });
    const engine = withSpeculation(core, { executor: speculative, cache: toolCache, stats: speculationStats, draft: () => draft, log: log.child({ subsystem: "speculation" }) });
    // Stop accepting and cancel the sessions first, then close the engine.
    started.push({ name: "engine", close: async () => (await server.close(), await engine.close()) });
    if (spec.draftModelPath !== undefined) {
      draft = await DraftModel.load(
        runtime.llama,
        { modelPath: spec.draftModelPath, ...(spec.draftAdapters !== undefined ? { adapters: spec.draftAdapters } : {}), threads: spec.draftThreads, contextSize: Math.min(2048, options.engine.contextSize) },
        log.child({ subsystem: "draft" }),
      );
      const loaded = draft;
      // Closed after the engine (which cancels the sessions that may be drafting).
      started.splice(started.length - 1, 0, { name: "draft-model", close: () => loaded.close() });
    }
    server.setEngine(engine);
    let heartbeat: HeartbeatPublisher | undefined;
    const hb = options.heartbeat;
    if (hb !== undefined) {
      const host = hb.podIp ?? (options.server.host === "0.0.0.0" || options.server.host === "::" ? "127.0.0.1" : options.server.host);
      // The pod's connection (heartbeats need a NATS URL, so there is one).
      const podNats = nc!;
      // KV events first: the heartbeat carries what they last published.
      let kvEvents: KvEventPublisher | undefined;
      if (hb.kvEventsMs > 0) {
        const events = (kvEvents = new KvEventPublisher(podNats, { pod: options.podName, pool: hb.pool, intervalMs: hb.kvEventsMs, log: log.child({ subsystem: "kv-events" }) }));
        events.start(engine);
        started.push({ name: "kv-events", close: async () => events.close() });
      }
      heartbeat = await HeartbeatPublisher.open(podNats, {
        pod: options.podName,
        endpoint: hb.advertiseUrl ?? `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
        pool: hb.pool,
        model: basename(modelPath),
        intervalMs: hb.intervalMs,
        capacityCheckMs: hb.capacityCheckMs,
        log: log.child({ subsystem: "heartbeat" }),
        ttftP90Ms: () => metrics.recentTtft.p90(),
        ...(kvEvents !== undefined ? { kvEvents } : {}),
      });
      heartbeat.start(engine);
      const beating = heartbeat;
      // Closed before the engine (closers run in reverse): routers stop placing here first.
      started.push({ name: "heartbeat", close: () => beating.close() });
      log.info({ pool: hb.pool, intervalMs: hb.intervalMs, kvEventsMs: hb.kvEventsMs, capacityCheckMs: hb.capacityCheckMs }, "heartbeats started");
    }
    log.info(
      {
        modelPath,
        contextSize: engine.contextSize,
        sequences: options.engine.sequences,
        threads: options.engine.threads,
        adapters: runtime.adapters.map((a) => a.path),
        promptStyle: runtime.promptStyle,
        draftModel: spec.draftModelPath ?? null,
        maxDraftTokens: spec.maxDraftTokens,
        loadMs: Math.round(performance.now() - t0),
      },
      "engine ready",
    );
    let closing: Promise<void> | undefined;
    const announced = heartbeat;
    const drain = async (graceMs = options.server.drainGraceMs): Promise<DrainOutcome> => {
      // Routers hear "draining" first (they stop placing here but keep relaying the live sessions' streams).
      await announced?.drain();
      return server.drain(graceMs);
    };
    return { server, engine, executor, toolCache, speculationStats, ...(draft !== undefined ? { draft } : {}), port, drain, close: () => (closing ??= closeAll()) };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** The engines' shared Responses store; loaded only with NATS, so standalone pods never load the KV client. */
async function openSharedResponseStore(nc: NatsConnection, options: { ttlMs: number; namespace: string }): Promise<ResponseStore> {
  const { JetStreamResponseStore } = await import("./server/jetstream-response-store.js");
  return JetStreamResponseStore.open(nc, options);
}

async function main(): Promise<void> {
  let options: EnginePodOptions;
  try {
    options = parseEnginePodOptions();
  } catch (err) {
    process.stderr.write(`engine: ${err instanceof InterlaceError ? err.message : String(err)}\n`);
    process.exit(2);
  }
  const log = createLogger("engine-pod", options.logLevel);
  // The drain's grace period, then up to 15 s to close the engine and the executor.
  const shutdown = new Shutdown(log, options.server.drainGraceMs + 15_000);
  shutdown.installSignalHandlers();
  try {
    const pod = await startEnginePod(options, log);
    shutdown.add("engine-pod", async () => {
      await pod.drain();
      await pod.close();
    });
  } catch (err) {
    log.fatal({ err }, "engine pod failed to start");
    await shutdown.run();
    process.exit(1);
  }
}

// Run only as the entrypoint, not when imported by tests or the demo.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}
