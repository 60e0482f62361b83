/**
 * @module The engine pod's HTTP server: the session API, the
 * OpenAI-compatible endpoints (chat completions, Responses), probes and
 * metrics on one express app. It can listen before the model is loaded
 * (`/healthz` answers, `/readyz` and the API say 503 until
 * {@link EngineServer.setEngine}), and it closes in order:
 * stop accepting, cancel the sessions it opened, then drop connections.
 */
import type { Server } from "node:http";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { ErrorCode, listen, mountProbes, type Logger } from "../../../common/src/index.js";
import type { Engine } from "../engine/index.js";
import type { EngineMetrics } from "../metrics/index.js";
import { ToolCache } from "../speculation/index.js";
import { mountCacheToolOutput } from "./cache-tool-output-route.js";
import { mountChatCompletions } from "./chat-completions-route.js";
import { DEFAULT_RESPONSE_RETENTION, type ResponseStore } from "./response-store.js";
import { MemoryResponseStore } from "./memory-response-store.js";
import { mountResponses } from "./responses-route.js";
import { HttpError, NOT_READY, sendError, toHttpError, type ErrorContext } from "./http-errors.js";
import type { ToolCatalog } from "./resolve-tools.js";
import { OPENAPI_DOCUMENT } from "./openapi.js";
import { mountSessionRoutes } from "./session-routes.js";
import { bearerAuth, type ApiKeys } from "../../../common/src/security/http-auth.js";

export interface EngineServerLimits {
  /** Largest request body, bytes (→ 413). */
  maxBodyBytes: number;
  /** Largest prompt, UTF-8 bytes (→ 413). */
  maxPromptBytes: number;
  /** `Retry-After` seconds on 429 and 503. */
  retryAfterSeconds: number;
  /** Largest output one `cache-tool-output` entry may carry, bytes (→ 413). Default min(maxBodyBytes, 256 KiB). */
  maxCachedOutputBytes?: number;
  /** How long a Responses API response stays retrievable and continuable (`previous_response_id`), ms. Default 30 min. */
  responseStoreTtlMs?: number;
  /** Most responses stored at once (oldest dropped first). Default 1024. */
  maxStoredResponses?: number;
}

export interface EngineServerOptions {
  catalog: ToolCatalog;
  limits: EngineServerLimits;
  metrics: EngineMetrics;
  log: Logger;
  /** The engine, when already loaded; else call {@link EngineServer.setEngine} later. */
  engine?: Engine;
  /** API keys for `Authorization: Bearer` (null or absent: authentication off). Probes and /metrics stay open. */
  apiKeys?: ApiKeys | null;
  /** The tool cache `cache-tool-output` fills (shared with the engine's speculation); default a private one. */
  toolCache?: ToolCache;
  /** Where Responses API turns are stored (the engines' shared bucket with NATS); default this process's memory, under the limits' TTL and cap. */
  responseStore?: ResponseStore;
}

export const DEFAULT_SERVER_LIMITS: EngineServerLimits = {
  maxBodyBytes: 1_048_576,
  maxPromptBytes: 262_144,
  retryAfterSeconds: 1,
};

export class EngineServer {
  readonly app: Express;
  private current: Engine | undefined;
  private closing = false;
  private closed: Promise<void> | undefined;
  private server: Server | undefined;
  private readonly live = new Set<string>();
  private readonly log: Logger;
  /** The tool cache behind `cache-tool-output`. */
  readonly toolCache: ToolCache;

  constructor(private readonly options: EngineServerOptions) {
    this.log = options.log;
    this.current = options.engine;
    const { limits, metrics } = options;
    if (options.engine !== undefined) metrics.bindEngine(options.engine);
    const errors: ErrorContext = { retryAfterSeconds: limits.retryAfterSeconds };
    const app = express();
    app.disable("x-powered-by");
    app.set("etag", false);

    app.use((req, res, next) => {
      const end = metrics.httpDuration.startTimer();
      res.once("close", () => {
        const route = (req.route as { path?: string } | undefined)?.path ?? "unmatched";
        const labels = { method: req.method, route: typeof route === "string" ? route : "unmatched" };
        end(labels);
        metrics.httpRequests.inc({ ...labels, status: String(res.statusCode) });
      });
      next();
    });

    mountProbes(app, { registry: metrics.registry, notReadyReason: () => this.notReadyReason() });
    app.get("/openapi.json", (_req: Request, res: Response) => {
      res.json(OPENAPI_DOCUMENT);
    });
    // Everything below the probes needs an API key (when keys are configured).
    app.use(bearerAuth(options.apiKeys ?? null));

    // Every body is read as JSON whatever its Content-Type (curl -d sends form encoding).
    const json = express.json({ limit: limits.maxBodyBytes, type: () => true });
    const engine = (): Engine => {
      const e = this.current;
      if (e === undefined || this.closing || !e.ready) {
        throw new HttpError(503, NOT_READY, this.notReadyReason() ?? "engine not ready", { "Retry-After": String(limits.retryAfterSeconds) });
      }
      return e;
    };
    mountSessionRoutes(app, json, { engine, catalog: options.catalog, maxPromptBytes: limits.maxPromptBytes, metrics, log: this.log, live: this.live });
    const toolCache = options.toolCache ?? new ToolCache();
    this.toolCache = toolCache;
    mountCacheToolOutput(app, json, {
      engine,
      cache: toolCache,
      maxOutputBytes: limits.maxCachedOutputBytes ?? Math.min(limits.maxBodyBytes, 262_144),
      maxTtlMs: toolCache.ttlMs,
    });
    mountChatCompletions(app, json, { engine, maxPromptBytes: limits.maxPromptBytes, metrics, log: this.log, errors });
    const store =
      options.responseStore ??
      new MemoryResponseStore({
        ttlMs: limits.responseStoreTtlMs ?? DEFAULT_RESPONSE_RETENTION.ttlMs,
        maxEntries: limits.maxStoredResponses ?? DEFAULT_RESPONSE_RETENTION.maxEntries,
      });
    mountResponses(app, json, { engine, maxPromptBytes: limits.maxPromptBytes, metrics, log: this.log, errors, store });

    app.use((req: Request, _res: Response) => {
      throw HttpError.of(ErrorCode.NotFound, `no route ${req.method} ${req.path}`);
    });
    app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
      const httpError = toHttpError(err, errors);
      if (httpError.status >= 500) this.log.error({ err, method: req.method, path: req.path }, "request failed");
      else this.log.debug({ code: httpError.code, message: httpError.message, method: req.method, path: req.path }, "request rejected");
      if (res.headersSent) res.end();
      else sendError(res, httpError);
    });
    this.app = app;
  }

  /** Why the server is not ready, or null. */
  notReadyReason(): string | null {
    if (this.closing) return "shutting down";
    if (this.current === undefined) return "model loading";
    if (!this.current.ready) return "engine not ready";
    return null;
  }

  get engine(): Engine | undefined {
    return this.current;
  }

  setEngine(engine: Engine): void {
    this.current = engine;
    this.options.metrics.bindEngine(engine);
  }

  /** Sessions opened through this server that have not finished. */
  get liveSessions(): number {
    return this.live.size;
  }

  async listen(port: number, host = "0.0.0.0"): Promise<number> {
    const { server, port: bound } = await listen(this.app, port, host);
    this.server = server;
    return bound;
  }

  /** Stops accepting connections (probes then say not ready). */
  stopAccepting(): Promise<void> {
    if (this.closing) return Promise.resolve();
    this.closing = true;
    const server = this.server;
    if (server === undefined) return Promise.resolve();
    return new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
  }

  /**
   * Cancels every session opened here and waits (up to `graceMs`) for their
   * streams to end with `done`; then drops whatever connection is left.
   */
  close(graceMs = 5_000): Promise<void> {
    this.closed ??= this.closeOnce(graceMs);
    return this.closed;
  }

  private async closeOnce(graceMs: number): Promise<void> {
    const closed = this.stopAccepting();
    const engine = this.current;
    if (engine !== undefined) {
      const finishing = [...this.live].map((id) => {
        engine.cancel(id);
        return engine.getSession(id)?.finished;
      });
      const grace = new Promise<void>((r) => setTimeout(r, graceMs).unref());
      await Promise.race([Promise.allSettled(finishing), grace]);
    }
    this.server?.closeAllConnections();
    await closed;
  }
}
