/**
 * @module The engine pod's HTTP server: the session API, the
 * OpenAI-compatible endpoints (chat completions, Responses), probes and
 * metrics on one express app. It can listen before the model is loaded
 * (`/healthz` answers, `/readyz` and the API say 503 until
 * {@link EngineServer.setEngine}), it drains ({@link EngineServer.drain}:
 * no new work, live sessions finish within a grace period), and it closes in
 * order: stop accepting, cancel the sessions it opened, then drop connections.
 */
import type { Server } from "node:http";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { ErrorCode, listen, mountProbes, type Logger } from "../../../common/src/index.js";
import { ADMISSION_HEADER } from "../../../common/src/protocol/index.js";
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
import { mountPrefixRoutes } from "./prefix-routes.js";
import { bearerAuth, type ApiKeys } from "../../../common/src/security/http-auth.js";
import { jsonBody } from "../../../common/src/json-body.js";

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

/** Requests that start new work on the engine: refused while it drains. */
const NEW_WORK = new Set(["/v1/sessions", "/v1/chat/completions", "/v1/responses", "/v1/prefixes"]);

/** What a session still running when the drain's grace period ends is told (an `error` event before `done: cancelled`). */
export const DRAIN_EXPIRED = { code: ErrorCode.Draining, message: "engine draining: grace period expired" } as const;

/** How a drain ended: sessions that finished on their own within the grace period, and those cut at its end. */
export interface DrainOutcome {
  finished: number;
  cut: number;
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
  private draining: Promise<DrainOutcome> | undefined;
  private closed: Promise<void> | undefined;
  private server: Server | undefined;
  private readonly live = new Set<string>();
  /** Requests for new work (sessions, completions, responses) whose answer has not finished. */
  private readonly answering = new Set<Response>();
  private readonly log: Logger;
  /** The tool cache behind `cache-tool-output`. */
  readonly toolCache: ToolCache;

  /**
   * An accepted answer (2xx) to new work carries the engine's admission
   * count as its headers go out: admission precedes them, so a heartbeat
   * with at least this count shows the request (routers release their
   * placement reservation on it). Read at header time, the count may
   * include later admissions too: the release then waits a beat longer,
   * never less.
   */
  private nameAdmission(res: Response): void {
    const writeHead = res.writeHead;
    res.writeHead = ((...args: Parameters<typeof writeHead>) => {
      const status = typeof args[0] === "number" ? args[0] : res.statusCode;
      const admissions = this.current?.stats().admissions;
      if (status >= 200 && status < 300 && admissions !== undefined && !res.headersSent) res.setHeader(ADMISSION_HEADER, String(admissions));
      return writeHead.apply(res, args);
    }) as typeof writeHead;
  }

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
    // A draining engine finishes what it has; new work goes to another engine (the router retries a 503 elsewhere).
    app.use((req: Request, res: Response, next: NextFunction) => {
      if (req.method !== "POST" || !NEW_WORK.has(req.path)) return next();
      if (this.draining !== undefined) {
        throw new HttpError(503, ErrorCode.Draining, "engine draining: it takes no new sessions while its live ones finish; retry (another engine will take it)", {
          "Retry-After": String(limits.retryAfterSeconds),
        });
      }
      // A drain's end waits for these answers (a completion cut then still tells its client why).
      this.answering.add(res);
      res.once("close", () => this.answering.delete(res));
      // A warm admits nothing.
      if (req.path !== "/v1/prefixes") this.nameAdmission(res);
      next();
    });

    // Every body is read as JSON whatever its Content-Type (curl -d sends form encoding), nested no deeper than MAX_JSON_DEPTH.
    const json = jsonBody({ limit: limits.maxBodyBytes });
    const engine = (): Engine => {
      const e = this.current;
      if (e === undefined || this.closing || !e.ready) {
        throw new HttpError(503, NOT_READY, this.notReadyReason() ?? "engine not ready", { "Retry-After": String(limits.retryAfterSeconds) });
      }
      return e;
    };
    mountSessionRoutes(app, json, { engine, catalog: options.catalog, maxPromptBytes: limits.maxPromptBytes, metrics, log: this.log, live: this.live });
    mountPrefixRoutes(app, json, { engine, catalog: options.catalog, maxPromptBytes: limits.maxPromptBytes, metrics, log: this.log, retryAfterSeconds: limits.retryAfterSeconds });
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
    if (this.draining !== undefined) return "draining: finishing live sessions, taking no new ones";
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

  /**
   * Drains the engine: from now on `/readyz` says not ready and new work
   * (sessions, completions, responses) gets 503 `draining` with
   * `Retry-After`; live sessions and completions run on, and their streams,
   * interrupts and cancels keep working. Resolves once none is live, or when
   * `graceMs` has passed: then every session and completion still live is
   * cancelled with {@link DRAIN_EXPIRED} (their clients see why), and it
   * resolves once their answers are out (or 5 s later). Call {@link close}
   * after it. Idempotent.
   */
  drain(graceMs: number, pollMs = 100): Promise<DrainOutcome> {
    this.draining ??= this.drainOnce(graceMs, pollMs);
    return this.draining;
  }

  private async drainOnce(graceMs: number, pollMs: number): Promise<DrainOutcome> {
    const engine = this.current;
    // Live sessions, and answers still being sent (an upstream backend's completions are not sessions).
    const active = (): number => Math.max(engine?.stats().activeSessions ?? 0, this.answering.size);
    const before = active();
    this.log.info({ graceMs, activeSessions: before }, "draining: no new sessions; waiting for live ones to finish");
    const deadline = performance.now() + graceMs;
    while (active() > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(1, deadline - performance.now()))));
    if (engine === undefined || active() === 0) {
      this.log.info({ finished: before }, "drained: every live session finished");
      return { finished: before, cut: 0 };
    }
    // Sessions and completions still running are told why; close() comes after their answers are out.
    const cut = engine.cancelAll(DRAIN_EXPIRED);
    this.log.warn({ graceMs, cut }, "drain grace period expired: live sessions and completions cancelled");
    const answered = async (): Promise<void> => {
      while (active() > 0) await new Promise((r) => setTimeout(r, pollMs));
    };
    await Promise.race([answered(), new Promise((r) => setTimeout(r, 5_000).unref())]);
    return { finished: Math.max(0, before - cut), cut };
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
