/**
 * @module The endpoint picker process: connects to NATS, watches the app
 * configs and the engine heartbeats (the router's registries), serves
 * `envoy.service.ext_proc.v3.ExternalProcessor` and gRPC health (`liveness`,
 * `readiness` and the ext_proc service, as GAIE requires) on its gRPC port,
 * and `/healthz`, `/readyz`, `/metrics` over HTTP. The gRPC port opens only
 * once both watches have loaded (a data plane retrying a closed port waits
 * for a restarting picker instead of failing its requests; `/readyz` says
 * why meanwhile). Closing reports NOT_SERVING first (the data plane's health
 * checks move new requests to another replica during `drainMs`), then stops
 * taking streams and lets the open ones finish (their responses may still
 * be streaming through) for up to `shutdownGraceMs`, then drains NATS.
 */
import type { Server as HttpServer } from "node:http";
import { Metadata, Server, ServerCredentials, type ServerDuplexStream } from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import express from "express";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorCode, listen, mountProbes, type Logger } from "../../../common/src/index.js";
import { AppAccess } from "../app-access.js";
import { connectNats } from "../../../common/src/security/nats-connect.js";
import { bearerHeaders, bearerOf } from "../../../common/src/security/http-auth.js";
import { AppRegistry } from "../app-registry.js";
import { EngineRegistry } from "../engine-registry.js";
import { HttpError } from "../errors.js";
import type { KvWatch } from "../kv-watch.js";
import { watchAppsAndEngines } from "../registry-watches.js";
import { SessionOwners } from "../session-owner.js";
import type { PickerOptions } from "./config.js";
import { EndpointPicker } from "./endpoint-picker.js";
import { ExtProcExchange, type ExchangeContext } from "./ext-proc-exchange.js";
import { warmCodecs } from "./codec-warmup.js";
import { externalProcessorService, type ProcessingRequest, type ProcessingResponse } from "./ext-proc-service.js";
import { PickerMetrics } from "./metrics.js";
import { requestApp, routeRequest } from "./picker-request.js";
import { EventPrefixIndex } from "../event-prefix-index.js";
import { PrefixWarmer, type WarmArrival } from "../prefix-warmer.js";
import { warmSettings } from "../config.js";
import { AppHomes } from "../app-homes.js";
import { watchKvEvents } from "../kv-event-watch.js";
import { kvEventsSubject, type AppConfig } from "../../../common/src/protocol/index.js";

/** The gRPC health service names GAIE's endpoint-picker protocol defines. */
export const HealthService = {
  Liveness: "liveness",
  Readiness: "readiness",
  ExtProc: "envoy.service.ext_proc.v3.ExternalProcessor",
} as const;

export interface Picker {
  grpcPort: number;
  port: number;
  metrics: PickerMetrics;
  apps: AppRegistry;
  engines: EngineRegistry;
  close(): Promise<void>;
}

export async function startPicker(options: PickerOptions, log: Logger): Promise<Picker> {
  const metrics = new PickerMetrics();
  const apps = new AppRegistry(log.child({ subsystem: "apps" }));
  // The same index the router keeps, so both front doors see the same prefixes (router-server.ts).
  const eventIndex = options.prefixIndex === "events" ? new EventPrefixIndex(log.child({ subsystem: "prefix-index" })) : undefined;
  const engines = new EngineRegistry({ ttlMs: options.engineTtlMs, log: log.child({ subsystem: "engines" }), ...(eventIndex !== undefined ? { prefixIndex: eventIndex } : {}) });
  const security = options.security;
  const owners = SessionOwners.from(security?.apiKeys ?? null, security?.ownerTagKey);
  const pool = options.pool;
  let ready = false;
  let closing = false;
  const loadingReason = (): string | null => (ready ? null : "loading app configs and engine heartbeats from NATS");
  // Probes say "shutting down" at once; streams that still arrive while draining are served (the data plane is moving away).
  const notReadyReason = (): string | null => (closing ? "shutting down" : loadingReason());

  const appOfPool = (namespace: string, name: string): AppConfig | undefined => {
    const config = apps.get(namespace, name)?.config;
    return config !== undefined && config.namespace === pool.namespace && config.enginePool.name === pool.name ? config : undefined;
  };
  const access = new AppAccess(security?.apiKeys ?? null, () => apps.all().map(([, served]) => served.config));
  const engineKey = security?.engineApiKey;
  // As the router's (router-server.ts); each picker replica counts the arrivals it sees (a router shares its own).
  const warmer = new PrefixWarmer({
    engines,
    metrics,
    log: log.child({ subsystem: "prefix-warm" }),
    engineHeaders: engineKey !== undefined ? bearerHeaders(engineKey) : {},
    settings: warmSettings(options.placement, options),
    timeoutMs: 60_000,
  });
  engines.onReady((p, pod) => warmer.engineReady(p, pod));
  const ctx: ExchangeContext = {
    picker: new EndpointPicker({
      engines,
      pool,
      policy: options.placement,
      loadFactor: options.loadFactor,
      prefixSlack: options.prefixSlack,
      prefixWaitMs: options.prefixWaitMs,
      retryAfterSeconds: options.retryAfterSeconds,
      maxEndpoints: options.maxEndpoints,
      metrics,
      // Homes only mean something where placement keeps an app on the engine holding its prefix.
      ...(options.placement === "prefix-affinity" && options.appHomes ? { appHomes: new AppHomes() } : {}),
    }),
    route: (req) =>
      routeRequest(req, {
        pool,
        owners,
        app: appOfPool,
      }),
    authenticate: (req) => access.principal(requestApp(req, { pool, app: appOfPool }), req.headers["authorization"]),
    owners,
    // Asked per request: the ring's key as it is then (a rotation needs no restart).
    ...(engineKey !== undefined ? { engineAuthorization: () => bearerOf(engineKey) } : {}),
    maxBodyBytes: options.maxBodyBytes,
    notReadyReason: loadingReason,
    retryAfterSeconds: options.retryAfterSeconds,
    metrics,
    log,
    ...(warmer.enabled ? { warmer: { observe: (arrival: Omit<WarmArrival, "pool">) => warmer.observe({ ...arrival, pool }) } } : {}),
  };

  const health = new HealthImplementation({ "": "SERVING", [HealthService.Liveness]: "SERVING", [HealthService.Readiness]: "NOT_SERVING", [HealthService.ExtProc]: "NOT_SERVING" });
  const setReady = (serving: boolean): void => {
    for (const s of [HealthService.Readiness, HealthService.ExtProc]) health.setStatus(s, serving ? "SERVING" : "NOT_SERVING");
  };
  const grpc = new Server();
  health.addToServer(grpc);
  const service = externalProcessorService();
  warmCodecs(service);
  grpc.addService(service, {
    Process: (call: ServerDuplexStream<ProcessingRequest, ProcessingResponse>) => serveStream(call, ctx),
  });
  const app = express();
  app.disable("x-powered-by");
  mountProbes(app, { registry: metrics.registry, notReadyReason });
  const { server: http, port } = await listen(app, options.port, options.host);
  const gauges = setInterval(() => metrics.engines.set(engines.loads(pool.namespace, pool.name).length), 1000);
  gauges.unref();

  let nc: NatsConnection | undefined;
  const watches: KvWatch[] = [];
  let grpcPort: number | undefined;
  const close = async (): Promise<void> => {
    closing = true;
    setReady(false);
    if (options.drainMs > 0 && grpcPort !== undefined) await new Promise((r) => setTimeout(r, options.drainMs));
    await shutdownGrpc(grpc, options.shutdownGraceMs);
    clearInterval(gauges);
    await closeHttp(http);
    for (const w of watches) w.stop();
    engines.stop();
    await warmer.settled();
    await nc?.drain().catch(() => undefined);
  };
  try {
    nc = await connectNats({ servers: options.natsUrl, name: `picker-${pool.namespace}-${pool.name}`, security: security?.nats ?? {} });
    await watchAppsAndEngines(nc, { apps, engines }, watches, log, (write, outcome) => metrics.reservationWrites.inc({ write, outcome }));
    if (eventIndex !== undefined) watchKvEvents(nc, eventIndex, log.child({ subsystem: "prefix-index" }), kvEventsSubject(pool));
    // Streams are taken only once the view is loaded: until then the data plane finds the port closed and retries
    // (a restarting picker's requests wait for it instead of failing).
    grpcPort = await new Promise<number>((resolve, reject) => {
      grpc.bindAsync(`${options.host.includes(":") ? `[${options.host}]` : options.host}:${options.grpcPort}`, ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
    });
    ready = true;
    setReady(true);
    log.info({ grpcPort, port, pool: `${pool.namespace}/${pool.name}`, placement: options.placement, prefixIndex: options.prefixIndex, loadFactor: options.loadFactor, prefixSlack: options.prefixSlack, prefixWaitMs: options.prefixWaitMs, prefixWarmSessions: warmer.enabled ? options.prefixWarmSessions : 0 }, "endpoint picker ready");
  } catch (err) {
    await close();
    throw err;
  }
  let closed: Promise<void> | undefined;
  return { grpcPort, port, metrics, apps, engines, close: () => (closed ??= close()) };
}

/** One ext_proc stream: its messages handled in order, one at a time; its end ends the answer stream. */
function serveStream(call: ServerDuplexStream<ProcessingRequest, ProcessingResponse>, ctx: ExchangeContext): void {
  ctx.metrics.inFlight.inc();
  // The stream's HTTP/2 response headers go out now, while the data plane is still sending the body,
  // rather than inside the pick with its first answer.
  call.sendMetadata(new Metadata());
  let open = true;
  const exchange = new ExtProcExchange(ctx, (response) => {
    if (open && !call.writableEnded) call.write(response);
  });
  let queue = Promise.resolve();
  const finish = (): void => {
    if (!open) return;
    open = false;
    ctx.metrics.inFlight.dec();
    exchange.close();
  };
  call.on("data", (msg: ProcessingRequest) => {
    queue = queue.then(() => exchange.handle(msg)).catch((err: unknown) => {
      ctx.log.error({ err }, "ext_proc message failed");
      call.destroy(err instanceof Error ? err : new Error(String(err)));
    });
  });
  call.on("end", () => {
    void queue.then(() => {
      finish();
      if (!call.writableEnded) call.end();
    });
  });
  call.on("cancelled", finish);
  call.on("error", finish);
  call.on("close", finish);
}

/** Stops taking streams and waits for the open ones, up to `graceMs`, then cuts them. */
function shutdownGrpc(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.forceShutdown(), graceMs);
    timer.unref();
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function closeHttp(server: HttpServer): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
