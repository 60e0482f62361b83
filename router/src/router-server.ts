/**
 * @module The router process: connects to NATS, watches the app configs and
 * the engine heartbeats, serves the app-level API with probes and metrics,
 * and publishes its presence. `/readyz` is ready once both watches have
 * loaded the buckets' current values. Closing stops accepting, lets open
 * streams end (each client sees its stream close; the engines cancel those
 * sessions), withdraws the presence and drains NATS.
 */
import type { Server } from "node:http";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorCode, listen, mountProbes, type Logger } from "../../common/src/index.js";
import { maxKvValueBytes, openRoutersBucket } from "../../common/src/protocol/index.js";
import { AppRegistry, type ServedApp } from "./app-registry.js";
import { ColdStartHold } from "./cold-start-hold.js";
import { CapacityQueue } from "./capacity-queue.js";
import { mountAppRoutes, param } from "./app-routes.js";
import { PrefixWarmer } from "./prefix-warmer.js";
import { WarmArrivals } from "./warm-arrivals.js";
import { AppHomes } from "./app-homes.js";
import { QueueHeads } from "./queue-heads.js";
import { warmSettings, type RouterOptions } from "./config.js";
import { EngineRegistry } from "./engine-registry.js";
import { HttpError, RouterCode, sendError, toHttpError } from "./errors.js";
import type { KvWatch } from "./kv-watch.js";
import { watchAppsAndEngines } from "./registry-watches.js";
import { EventPrefixIndex } from "./event-prefix-index.js";
import { watchKvEvents } from "./kv-event-watch.js";
import { RouterMetrics } from "./metrics.js";
import { PresencePublisher } from "./presence.js";
import { SessionOwners } from "./session-owner.js";
import { AppAccess } from "./app-access.js";
import { jsonBody } from "../../common/src/json-body.js";
import { connectNats } from "../../common/src/security/nats-connect.js";
import { bearerHeaders } from "../../common/src/security/http-auth.js";
import { ProgramExecutor } from "./programs/program-executor.js";
import { ProgramPrefixes } from "./programs/program-prefixes.js";
import { mountProgramRoutes } from "./programs/program-routes.js";
import { ProgramStore } from "./programs/program-store.js";
import { openProgramsBucket } from "./programs/program-bucket.js";

export interface Router {
  port: number;
  metrics: RouterMetrics;
  apps: AppRegistry;
  engines: EngineRegistry;
  /** The HTTP app (its route table is what the route fuzzer covers). */
  app: Express;
  close(): Promise<void>;
}

export async function startRouter(options: RouterOptions, log: Logger): Promise<Router> {
  const metrics = new RouterMetrics();
  const malformed = (source: string) => () => metrics.malformedMessages.inc({ source });
  const apps = new AppRegistry(log.child({ subsystem: "apps" }), malformed("apps"));
  const eventIndex = options.prefixIndex === "events" ? new EventPrefixIndex(log.child({ subsystem: "prefix-index" })) : undefined;
  const engines = new EngineRegistry({ ttlMs: options.engineTtlMs, log: log.child({ subsystem: "engines" }), onMalformed: malformed("engines"), ...(eventIndex !== undefined ? { prefixIndex: eventIndex } : {}) });
  const live = new Map<string, number>();
  let ready = false;
  let closing = false;
  let turn = 0;

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use((req, res, next) => {
    const end = metrics.httpDuration.startTimer();
    res.once("close", () => {
      const route = (req.route as { path?: string } | undefined)?.path;
      const labels = { method: req.method, route: typeof route === "string" ? route : "unmatched" };
      end(labels);
      metrics.httpRequests.inc({ ...labels, status: String(res.statusCode) });
    });
    next();
  });
  const notReadyReason = (): string | null => (closing ? "shutting down" : ready ? null : "loading app configs and engine heartbeats from NATS");
  mountProbes(app, { registry: metrics.registry, notReadyReason });
  app.use("/v1", (_req, _res, next) => {
    const reason = notReadyReason();
    if (reason !== null) throw new HttpError(503, RouterCode.NotReady, `router not ready: ${reason}`, { "Retry-After": String(options.retryAfterSeconds) });
    next();
  });
  // Every API request carries a client's API key, scoped to the app it names (app-access.ts); probes and
  // /metrics stay open (NetworkPolicies guard them). Checked before any body is read.
  const security = options.security;
  const access = new AppAccess(security?.apiKeys ?? null, () => apps.all().map(([, served]) => served.config));
  const admit = (res: Response, served: ServedApp | undefined, authorization: string | undefined): void => {
    try {
      res.locals["principal"] = access.principal(served?.config, authorization);
    } catch (err) {
      if (err instanceof HttpError) metrics.rejected.inc({ code: err.code });
      throw err;
    }
  };
  app.use("/v1/apps/:ns/:app", (req, res, next) => {
    admit(res, apps.get(param(req, "ns"), param(req, "app")), req.get("Authorization"));
    next();
  });
  app.use("/v1", (req, res, next) => {
    if (res.locals["principal"] === undefined) admit(res, undefined, req.get("Authorization"));
    next();
  });
  const json = jsonBody({ limit: options.maxBodyBytes });
  let nc: NatsConnection | undefined;
  const placeContext = {
    // A getter: each request presents the ring's key as it is then (a rotation needs no restart).
    engineHeaders: security?.engineApiKey !== undefined ? bearerHeaders(security.engineApiKey) : {},
    engines,
    metrics,
    log,
    policy: options.placement,
    loadFactor: options.loadFactor,
    prefixSlack: options.prefixSlack,
    retryAfterSeconds: options.retryAfterSeconds,
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    prefixWaitMs: options.prefixWaitMs,
    nextTurn: () => turn++,
  };
  // App requests wait out a cold start (their pool scaled to zero or starting); programs keep their own queue.
  // The first request held for a pool is in the presence at once: it is what wakes a pool the autoscaler took to zero.
  let presence: PresencePublisher | undefined;
  const coldStart = new ColdStartHold({
    engines,
    metrics,
    maxHeld: options.coldStartMaxHeld,
    timeoutMs: options.coldStartHoldMs,
    retryAfterSeconds: options.retryAfterSeconds,
    onFirstHeld: () => void presence?.publish(),
  });
  // App requests that find every engine full wait for a sequence in arrival order (capacity-queue.ts).
  const queue = new CapacityQueue({ engines, metrics, maxQueued: options.maxQueued, timeoutMs: options.queueMs, retryAfterSeconds: options.retryAfterSeconds });
  // Warming a second engine only makes sense where placement keeps an app on the engine holding its prefix.
  const prefixWarmer = new PrefixWarmer({
    engines,
    metrics,
    log,
    engineHeaders: placeContext.engineHeaders,
    settings: warmSettings(options.placement, options),
    timeoutMs: Math.max(options.upstreamTimeoutMs, 60_000),
  });
  // A new engine gets the hot apps' prefixes as it comes up, before the sessions that spill to it.
  engines.onReady((pool, pod) => prefixWarmer.engineReady(pool, pod));
  // Homes only mean something where placement keeps an app on the engine holding its prefix.
  const appHomes = options.placement === "prefix-affinity" && options.appHomes ? new AppHomes() : undefined;
  mountAppRoutes(app, json, {
    ...placeContext,
    coldStart,
    queue,
    prefixWarmer,
    ...(appHomes !== undefined ? { appHomes } : {}),
    owners: SessionOwners.from(security?.apiKeys ?? null, security?.ownerTagKey),
    apps,
    live,
  });
  const programPrefixes = new ProgramPrefixes(60_000);
  engines.onGone((pod) => programPrefixes.forget(pod));
  const programLog = log.child({ subsystem: "programs" });
  const programs = new ProgramStore(
    { routerId: options.routerId, max: options.maxPrograms, keepMs: options.programKeepMs, retryAfterSeconds: options.retryAfterSeconds, deduction: options.programDeduction, leaseMs: options.programLeaseMs },
    metrics,
    new ProgramExecutor({ ...placeContext, log: programLog, prefixes: programPrefixes, queueTimeoutMs: options.programQueueTimeoutMs, latencyBatch: options.programLatencyBatch }),
    programLog,
  );
  mountProgramRoutes(app, json, {
    apps,
    metrics,
    store: programs,
    limits: { maxValueBytes: options.maxVariableBytes, maxCalls: options.maxProgramCalls },
  });
  app.use((req: Request) => {
    throw new HttpError(404, ErrorCode.NotFound, `no route ${req.method} ${req.path}`);
  });
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = toHttpError(err);
    if (e.status >= 500 && e.code !== RouterCode.NoEngine && e.code !== RouterCode.NotReady) log.error({ err, method: req.method, path: req.path }, "request failed");
    else log.debug({ code: e.code, message: e.message, path: req.path }, "request rejected");
    if (res.headersSent) res.end();
    else sendError(res, e);
  });

  const { server, port } = await listen(app, options.port, options.host);
  const watches: KvWatch[] = [];
  const gauges = setInterval(() => {
    for (const [pool, n] of engines.counts()) metrics.engines.set({ pool }, n);
    metrics.apps.set(apps.size);
  }, 1000);
  gauges.unref();

  const close = async (): Promise<void> => {
    closing = true;
    clearInterval(gauges);
    // Running programs are handed over first: their leases are released, so another replica resumes them at once.
    await programs.close();
    await closeServer(server);
    for (const w of watches) w.stop();
    engines.stop();
    queue.close();
    await presence?.close();
    await nc?.drain().catch(() => undefined);
  };
  try {
    nc = await connectNats({ servers: options.natsUrl, name: `router-${options.routerId}`, security: security?.nats ?? {} });
    // Events before heartbeats: an event published between the first heartbeat and the subscription would read as a gap.
    if (eventIndex !== undefined) watchKvEvents(nc, eventIndex, log.child({ subsystem: "prefix-index" }), undefined, malformed("kv_events"));
    await watchAppsAndEngines(nc, { apps, engines }, watches, log, (write, outcome) => metrics.reservationWrites.inc({ write, outcome }));
    if (prefixWarmer.enabled || appHomes !== undefined) {
      // An app's heat, and the apps that hold homes, count every replica's arrivals, not only this one's share of them.
      const arrivals = new WarmArrivals(nc, log.child({ subsystem: "warm-arrivals" }));
      arrivals.listen((pool, key) => {
        prefixWarmer.observeRemote(pool, key);
        appHomes?.observeRemote(pool, key);
      }, malformed("warm_arrivals"));
      // One announcement per arrival: the homes announce every app arrival when kept, else the warmer its placed sessions.
      if (appHomes !== undefined) appHomes.shareArrivals(arrivals);
      else prefixWarmer.shareArrivals(arrivals);
    }
    if (queue.enabled) {
      // Queued requests place in one arrival order over every replica, not per replica.
      const heads = new QueueHeads(nc, log.child({ subsystem: "queue-heads" }));
      heads.listen((pool, router, head) => queue.observeRemote(pool, router, head), malformed("queue_heads"));
      queue.shareHeads(heads);
    }
    const routersKv = await openRoutersBucket(nc);
    await programs.attach(await openProgramsBucket(nc), maxKvValueBytes(nc));
    presence = new PresencePublisher(routersKv, options.routerId, apps, live, log, () => sumByPool(coldStart.heldByPool(), queue.queuedByPool()));
    presence.start(options.presenceMs);
    ready = true;
    log.info({ port, apps: apps.size, placement: options.placement, prefixIndex: options.prefixIndex, loadFactor: options.loadFactor, prefixSlack: options.prefixSlack, prefixWaitMs: options.prefixWaitMs, prefixWarmSessions: prefixWarmer.enabled ? options.prefixWarmSessions : 0, prefixWarmWindowMs: options.prefixWarmWindowMs, engineTtlMs: options.engineTtlMs, coldStartHoldMs: options.coldStartHoldMs, coldStartMaxHeld: options.coldStartMaxHeld, queueMs: options.queueMs, maxQueued: options.maxQueued }, "router ready");
  } catch (err) {
    await close();
    throw err;
  }
  let closed: Promise<void> | undefined;
  return { port, metrics, apps, engines, app, close: () => (closed ??= close()) };
}

/** Stops accepting; open streams get a moment to finish, then connections are dropped. */
function closeServer(server: Server, graceMs = 5_000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** Requests waiting per pool key, summed over the router's waits (the presence's `held`: the autoscaler's signal). */
function sumByPool(...counts: ReadonlyMap<string, number>[]): Map<string, number> {
  const sum = new Map<string, number>();
  for (const m of counts) for (const [k, n] of m) sum.set(k, (sum.get(k) ?? 0) + n);
  return sum;
}
