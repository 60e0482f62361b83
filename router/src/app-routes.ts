/**
 * @module The app-level API, proxied to the engine that owns each session:
 * `POST /v1/apps/{ns}/{app}/sessions` (placed by prefix affinity under the
 * load bound), `GET .../sessions/{id}/events` (SSE relayed with
 * `Last-Event-ID` and backpressure; a client that goes cancels the engine
 * session; an engine that dies ends the stream with an `engine_lost` error
 * event), `POST .../sessions/{id}/interrupts` (the app's interrupt settings
 * enforced), `DELETE .../sessions/{id}`, `POST .../sessions/{id}/cache-tool-output`
 * and the paper's `POST .../cache-tool-output/{id}` (a client's tool outputs,
 * to the owning engine's tool cache), `POST .../chat/completions`
 * (OpenAI-compatible, streaming and not; a session header keeps a
 * conversation on its engine, session-affinity.ts), `POST .../responses` and
 * `GET .../responses/{id}` (the OpenAI Responses API) and
 * `GET /v1/apps/{ns}/{app}`. Requests that open work (sessions, chat
 * completions, first Responses turns) wait out a cold start of their pool
 * (cold-start-hold.ts). Session and response ids name their engine
 * (session-id.ts), so any replica serves any session, and a
 * `previous_response_id` goes to the engine that retains that response's
 * sequence. Responses are stored in the engines' shared bucket, so when that
 * engine is gone a follow-up is placed as a first turn is (the engine it
 * reaches prefills the stored conversation), and GET, `input_items`,
 * DELETE and cancel go to any ready engine of the app's pool.
 */
import type { Express, Request, RequestHandler, Response } from "express";
import { ErrorCode, type Logger } from "../../common/src/index.js";
import type { EngineHeartbeat } from "../../common/src/protocol/index.js";
import { parseTemplate, templateInputs, templateOutputs } from "../../common/src/semantic-function.js";
import type { AppRegistry, ServedApp } from "./app-registry.js";
import type { EngineRegistry } from "./engine-registry.js";
import { watchEngineLiveness } from "./engine-liveness.js";
import { HttpError, notFound, RouterCode } from "./errors.js";
import type { RouterMetrics } from "./metrics.js";
import { isObject, mergeChatRequest, mergeInterruptRequest, mergeResponsesRequest, mergeSessionRequest } from "./request-merge.js";
import { parseRoutedResponseId, parseRoutedSessionId, routedResponseId, routedSessionId } from "./session-id.js";
import { startEventStream } from "../../common/src/event-stream.js";
import { relayEventStream, type RelayOptions } from "./stream-relay.js";
import { placeAndPost, type PlaceContext } from "./upstream.js";
import { onBehalfOf, principalOf } from "../../common/src/security/http-auth.js";
import type { SessionOwners } from "./session-owner.js";
import { pickTiming } from "./server-timing.js";
import { withSession } from "./session-affinity.js";
import type { PrefixWarmer } from "./prefix-warmer.js";

export interface AppRoutesContext extends PlaceContext {
  apps: AppRegistry;
  engines: EngineRegistry;
  metrics: RouterMetrics;
  log: Logger;
  /** Live streams and completions per app key (`ns/name`), for presence and the gauge. */
  live: Map<string, number>;
  /** Binds session ids to the API key that opened them. */
  owners: SessionOwners;
  /** Hot-prefix warming: told of each session placed (absent: off). */
  prefixWarmer?: PrefixWarmer;
}

export function param(req: Request, name: string): string {
  const v = req.params[name];
  return typeof v === "string" ? v : "";
}

export function appOf(ctx: Pick<AppRoutesContext, "apps" | "metrics">, req: Request): ServedApp {
  const ns = param(req, "ns");
  const name = param(req, "app");
  const app = ctx.apps.get(ns, name);
  if (app === undefined) {
    ctx.metrics.rejected.inc({ code: ErrorCode.NotFound });
    throw notFound(`no AgentApp "${ns}/${name}" is served here (unknown app, or its config has not reached the routers)`);
  }
  return app;
}

/** 403 (counted) unless the caller's key is the one whose owner tag the routed id carries. */
function refuseUnlessOwner(ctx: AppRoutesContext, parsed: { base: string; ownerTag?: string }, res: Response, message: string): void {
  if (ctx.owners.owns(parsed.base, parsed.ownerTag, principalOf(res))) return;
  ctx.metrics.rejected.inc({ code: RouterCode.Forbidden });
  throw new HttpError(403, RouterCode.Forbidden, message);
}

function ownerOf(ctx: AppRoutesContext, app: ServedApp, req: Request, res: Response): { engine: EngineHeartbeat; engineSessionId: string; id: string } {
  const id = param(req, "id");
  const parsed = parseRoutedSessionId(id);
  if (parsed === null) throw notFound(`no session "${id}" (not a session id this router issued)`);
  refuseUnlessOwner(ctx, parsed, res, `session "${id}" belongs to another API key: only the key that opened it may read, interrupt or cancel it`);
  const engine = ctx.engines.find(app.config.namespace, parsed.pod);
  if (engine === undefined) {
    throw new HttpError(410, RouterCode.EngineLost, `session "${id}" ran on engine ${parsed.pod}, which is gone (no heartbeat within the TTL); its session ended`);
  }
  return { engine, engineSessionId: parsed.engineSessionId, id };
}

/** Copies an engine's non-2xx JSON answer to the client, keeping its status and code. */
async function relayError(res: Response, upstream: globalThis.Response): Promise<void> {
  const retry = upstream.headers.get("retry-after");
  if (retry !== null) res.setHeader("Retry-After", retry);
  res.status(upstream.status).type(upstream.headers.get("content-type") ?? "application/json").send(Buffer.from(await upstream.arrayBuffer()));
}

function track(ctx: AppRoutesContext, key: string, delta: number): void {
  const n = (ctx.live.get(key) ?? 0) + delta;
  if (n <= 0) ctx.live.delete(key);
  else ctx.live.set(key, n);
  ctx.metrics.activeSessions.set({ app: key }, Math.max(0, n));
}

async function callEngine(ctx: AppRoutesContext, engine: EngineHeartbeat, path: string, init: { method: string; headers?: Record<string, string>; body?: string }, signal?: AbortSignal): Promise<globalThis.Response> {
  const timeout = AbortSignal.timeout(ctx.upstreamTimeoutMs);
  try {
    return await fetch(`${engine.endpoint}${path}`, { ...init, headers: { ...ctx.engineHeaders, ...init.headers }, signal: signal !== undefined ? AbortSignal.any([signal, timeout]) : timeout });
  } catch (err) {
    if (signal?.aborted === true) throw err;
    throw new HttpError(502, RouterCode.EngineLost, `engine ${engine.pod} did not answer: ${(err as Error).message}`);
  }
}

/** When a request's body had arrived (parsed): where its pick starts, as the endpoint picker's does (server-timing.ts). */
const received = (res: Response): number | undefined => res.locals["bodyReceivedAt"] as number | undefined;

/** `Server-Timing: pick;dur=` on a placed request's answer: its body's arrival to the engine request that was answered. */
function setPickTiming(res: Response, sentAt: number | undefined): void {
  const at = received(res);
  if (at !== undefined && sentAt !== undefined) res.setHeader("Server-Timing", pickTiming(sentAt - at));
}

export function mountAppRoutes(app: Express, parseJson: RequestHandler, ctx: AppRoutesContext): void {
  const json: RequestHandler = (req, res, next) =>
    parseJson(req, res, (err?: unknown) => {
      res.locals["bodyReceivedAt"] = performance.now();
      next(err);
    });
  app.get("/v1/apps/:ns/:app", (req, res) => {
    const served = appOf(ctx, req);
    const c = served.config;
    const engines = ctx.engines.describe(c.namespace, c.enginePool.name);
    res.json({
      namespace: c.namespace,
      name: c.name,
      configHash: served.hash,
      enginePool: c.enginePool.name,
      callingMode: c.callingMode,
      objective: c.objective,
      tools: c.tools.map((t) => t.name),
      // The app's own semantic functions, for clients that call them by name (the templates stay the operator's).
      functions: c.semanticFunctions.map((f) => {
        const pieces = parseTemplate(f.template);
        return { name: f.name, inputs: templateInputs(pieces), outputs: templateOutputs(pieces) };
      }),
      engines,
    });
  });

  app.post("/v1/apps/:ns/:app/sessions", json, async (req: Request, res: Response) => {
    const { config } = appOf(ctx, req);
    const merged = mergeSessionRequest(config, req.body);
    const pool = { namespace: config.namespace, name: config.enginePool.name };
    // A client that leaves while its request is held for a cold start stops holding it.
    const gone = new AbortController();
    const onClose = (): void => {
      if (!res.writableEnded) gone.abort();
    };
    res.on("close", onClose);
    // Counted as active before it is placed, so its first session already goes to its home.
    if (merged.appSegments > 0) ctx.appHomes?.observe(pool, merged.affinityKey);
    let placed;
    try {
      placed = await placeAndPost(ctx, pool, merged, "/v1/sessions", merged.body, gone.signal);
    } catch (err) {
      if (gone.signal.aborted) return;
      throw err;
    } finally {
      res.off("close", onClose);
    }
    setPickTiming(res, placed.sentAt);
    if (!placed.response.ok) return relayError(res, placed.response);
    const created = (await placed.response.json()) as { id: string };
    const base = routedSessionId(placed.engine.pod, created.id);
    const id = routedSessionId(placed.engine.pod, created.id, ctx.owners.tag(base, principalOf(res)));
    ctx.log.info({ app: `${config.namespace}/${config.name}`, session: id, engine: placed.engine.pod, reason: placed.reason, matched: placed.matched }, "session placed");
    ctx.prefixWarmer?.observe({ app: `${config.namespace}/${config.name}`, pool, chain: merged.chain, affinityKey: merged.affinityKey, appSegments: merged.appSegments, body: merged.body });
    res.status(201).json({
      id,
      eventsUrl: `/v1/apps/${encodeURIComponent(config.namespace)}/${encodeURIComponent(config.name)}/sessions/${id}/events`,
      engine: placed.engine.pod,
      placement: { reason: placed.reason, matchedSegments: placed.matched, segments: merged.chain.length, retries: placed.retries, queuedMs: placed.queuedMs },
    });
  });

  app.get("/v1/apps/:ns/:app/sessions/:id/events", async (req: Request, res: Response) => {
    const served = appOf(ctx, req);
    const { engine, engineSessionId, id } = ownerOf(ctx, served, req, res);
    const key = `${served.config.namespace}/${served.config.name}`;
    const upstreamAbort = new AbortController();
    let lostReason: string | undefined;
    // A lapsed heartbeat cuts the stream only if the engine does not answer either (engine-liveness.ts).
    const stopWatching = watchEngineLiveness(ctx.engines, engine, ctx.engineHeaders, (reason) => {
      lostReason = reason;
      upstreamAbort.abort();
    });
    // The client went: drop the engine stream, which makes the engine cancel the session.
    const onClose = (): void => upstreamAbort.abort();
    res.on("close", onClose);
    try {
      const headers: Record<string, string> = { ...ctx.engineHeaders, accept: "text/event-stream" };
      const lastEventId = req.get("Last-Event-ID");
      if (lastEventId !== undefined) headers["Last-Event-ID"] = lastEventId;
      let upstream: globalThis.Response;
      try {
        upstream = await fetch(`${engine.endpoint}/v1/sessions/${encodeURIComponent(engineSessionId)}/events`, { headers, signal: upstreamAbort.signal });
      } catch (err) {
        if (res.destroyed) return;
        throw new HttpError(410, RouterCode.EngineLost, `session "${id}": its engine ${engine.pod} is unreachable (${lostReason ?? (err as Error).message}); the session ended`);
      }
      if (!upstream.ok || upstream.body === null) return relayError(res, upstream);
      startEventStream(res);
      track(ctx, key, +1);
      try {
        const outcome = await relayEventStream(upstream.body, res);
        if (outcome.clientGone) {
          ctx.log.info({ session: id, engine: engine.pod }, "client left the event stream; engine session cancelled");
          return;
        }
        if (!outcome.completed) {
          const message = `engine ${engine.pod} stopped before the session finished (${lostReason ?? "connection lost"})`;
          ctx.log.warn({ session: id, engine: engine.pod }, message);
          res.write(`event: error\ndata: ${JSON.stringify({ type: "error", code: RouterCode.EngineLost, message, t: 0 })}\n\n`);
        }
        res.end();
      } finally {
        track(ctx, key, -1);
      }
    } finally {
      stopWatching();
      res.off("close", onClose);
    }
  });

  app.post("/v1/apps/:ns/:app/sessions/:id/interrupts", json, async (req: Request, res: Response) => {
    const served = appOf(ctx, req);
    const body = mergeInterruptRequest(served.config, req.body);
    if (body.kind === "user" && !served.config.interrupts.userInterrupts) {
      ctx.metrics.rejected.inc({ code: RouterCode.Forbidden });
      throw new HttpError(403, RouterCode.Forbidden, `AgentApp ${served.config.namespace}/${served.config.name} does not take user interrupts (spec.interrupts.userInterrupts: false)`);
    }
    const { engine, engineSessionId, id } = ownerOf(ctx, served, req, res);
    // Over the engine's authenticated HTTP API, not NATS: the engine answers at once, so the app's
    // maxQueued (429), an unknown session (404) and a finished one reach the client.
    const upstream = await callEngine(ctx, engine, `/v1/sessions/${encodeURIComponent(engineSessionId)}/interrupts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!upstream.ok) return relayError(res, upstream);
    const accepted = (await upstream.json()) as Record<string, unknown>;
    res.status(202).json({ ...accepted, sessionId: id, engine: engine.pod });
  });

  // The speculative-tool-calls paper's cache-tool-output: the outputs go to the engine that owns the session (a response id is a session id).
  const cacheToolOutput = async (req: Request, res: Response): Promise<void> => {
    const served = appOf(ctx, req);
    const { engine, engineSessionId, id } = ownerOf(ctx, served, req, res);
    const upstream = await callEngine(ctx, engine, `/v1/sessions/${encodeURIComponent(engineSessionId)}/cache-tool-output`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(req.body),
    });
    if (!upstream.ok) return relayError(res, upstream);
    res.status(200).json({ ...((await upstream.json()) as Record<string, unknown>), sessionId: id, engine: engine.pod });
  };
  app.post("/v1/apps/:ns/:app/sessions/:id/cache-tool-output", json, cacheToolOutput);
  app.post("/v1/apps/:ns/:app/cache-tool-output/:id", json, cacheToolOutput);

  app.delete("/v1/apps/:ns/:app/sessions/:id", async (req: Request, res: Response) => {
    const served = appOf(ctx, req);
    const { engine, engineSessionId, id } = ownerOf(ctx, served, req, res);
    const upstream = await callEngine(ctx, engine, `/v1/sessions/${encodeURIComponent(engineSessionId)}`, { method: "DELETE" });
    if (!upstream.ok) return relayError(res, upstream);
    const body = (await upstream.json()) as Record<string, unknown>;
    res.status(200).json({ ...body, id });
  });

  app.post("/v1/apps/:ns/:app/chat/completions", json, async (req: Request, res: Response) => {
    const { config } = appOf(ctx, req);
    const merged = withSession(mergeChatRequest(config, req.body), (h) => req.get(h));
    const pool = { namespace: config.namespace, name: config.enginePool.name };
    await proxyOpenAi(ctx, res, config, merged.stream, (signal) => placeAndPost(ctx, pool, merged, "/v1/chat/completions", merged.body, signal), {
      lost: (pod) => `data: ${JSON.stringify({ error: { code: RouterCode.EngineLost, message: `engine ${pod} stopped mid-completion`, type: "server_error", param: null } })}\n\n`,
    });
  });

  // Responses: a first turn is placed as chat completions are; a follow-up goes where its previous response is while that
  // engine lives (it may retain the response's sequence; response ids name their engine, session-id.ts), else it is placed too.
  app.post("/v1/apps/:ns/:app/responses", json, async (req: Request, res: Response) => {
    const { config } = appOf(ctx, req);
    const merged = withSession(mergeResponsesRequest(config, req.body), (h) => req.get(h));
    const pool = { namespace: config.namespace, name: config.enginePool.name };
    const previous = merged.previousResponseId !== undefined ? routedResponse(ctx, merged.previousResponseId, res, "previous_response_id") : undefined;
    const body = previous !== undefined ? { ...merged.body, previous_response_id: previous.engineResponseId } : merged.body;
    const principal = principalOf(res);
    // The engine stores the response with its creator's key id (and checks it on a continuation).
    const actingCtx = { ...ctx, engineHeaders: { ...ctx.engineHeaders, ...onBehalfOf(principal) } };
    const send = async (signal: AbortSignal): Promise<{ engine: EngineHeartbeat; response: globalThis.Response; sentAt?: number }> => {
      const holder = previous !== undefined ? ctx.engines.find(config.namespace, previous.pod) : undefined;
      if (holder === undefined) return placeAndPost(actingCtx, pool, merged, "/v1/responses", body, signal);
      // No re-placement while the holder lives: only it retains the sequence; its 429 (no free sequence) goes back to the client.
      const response = await callEngine(actingCtx, holder, "/v1/responses", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }, signal);
      return { engine: holder, response };
    };
    let engine = "";
    // The `error` event the router adds when the engine goes continues the stream's numbering.
    let nextSequence = 0;
    const rewrite = (data: string): string => {
      let event: unknown;
      try {
        event = JSON.parse(data);
      } catch {
        return data;
      }
      if (!isObject(event)) return data;
      if (typeof event["sequence_number"] === "number") nextSequence = event["sequence_number"] + 1;
      if (!isObject(event["response"])) return data;
      return JSON.stringify({ ...event, response: clientResponse(ctx, event["response"], engine, principal, merged.previousResponseId) });
    };
    await proxyOpenAi(ctx, res, config, merged.stream, async (signal) => {
      const sent = await send(signal);
      engine = sent.engine.pod;
      return sent;
    }, {
      json: (payload) => clientResponse(ctx, payload, engine, principal, merged.previousResponseId),
      rewrite,
      ends: (e) => ["response.completed", "response.incomplete", "response.failed", "error"].includes(e.event ?? ""),
      lost: (pod) => `event: error\ndata: ${JSON.stringify({ type: "error", code: RouterCode.EngineLost, message: `engine ${pod} stopped mid-response`, param: null, sequence_number: nextSequence })}\n\n`,
    });
  });

  app.get("/v1/apps/:ns/:app/responses/:id", async (req: Request, res: Response) => {
    const { config } = appOf(ctx, req);
    const { engine, engineResponseId, pod } = responseEngine(ctx, config, param(req, "id"), res);
    const upstream = await callEngine(ctx, engine, `/v1/responses/${encodeURIComponent(engineResponseId)}`, { method: "GET", headers: onBehalfOf(principalOf(res)) });
    if (!upstream.ok) return relayError(res, upstream);
    res.setHeader("X-Interlace-Engine", engine.pod);
    res.json(clientResponse(ctx, await upstream.json(), pod, principalOf(res)));
  });

  // A stored response's input items (paged by item ids, which need no routing), its deletion and a running one's cancel:
  // on the engine that generated it, or any engine of the pool once that one is gone (they share the store).
  app.get("/v1/apps/:ns/:app/responses/:id/input_items", async (req: Request, res: Response) => {
    const { config } = appOf(ctx, req);
    const { engine, engineResponseId } = responseEngine(ctx, config, param(req, "id"), res);
    const query = new URLSearchParams(Object.entries(req.query).flatMap(([k, v]): [string, string][] => (typeof v === "string" ? [[k, v]] : [])));
    const search = query.size > 0 ? `?${query.toString()}` : "";
    const upstream = await callEngine(ctx, engine, `/v1/responses/${encodeURIComponent(engineResponseId)}/input_items${search}`, { method: "GET", headers: onBehalfOf(principalOf(res)) });
    if (!upstream.ok) return relayError(res, upstream);
    res.setHeader("X-Interlace-Engine", engine.pod);
    res.json(await upstream.json());
  });

  app.delete("/v1/apps/:ns/:app/responses/:id", async (req: Request, res: Response) => {
    const { config } = appOf(ctx, req);
    const id = param(req, "id");
    const { engine, engineResponseId } = responseEngine(ctx, config, id, res);
    const upstream = await callEngine(ctx, engine, `/v1/responses/${encodeURIComponent(engineResponseId)}`, { method: "DELETE", headers: onBehalfOf(principalOf(res)) });
    if (!upstream.ok) return relayError(res, upstream);
    res.setHeader("X-Interlace-Engine", engine.pod);
    res.json({ ...((await upstream.json()) as Record<string, unknown>), id });
  });

  app.post("/v1/apps/:ns/:app/responses/:id/cancel", async (req: Request, res: Response) => {
    const { config } = appOf(ctx, req);
    const { engine, engineResponseId, pod } = responseEngine(ctx, config, param(req, "id"), res);
    const upstream = await callEngine(ctx, engine, `/v1/responses/${encodeURIComponent(engineResponseId)}/cancel`, { method: "POST", headers: onBehalfOf(principalOf(res)) });
    if (!upstream.ok) return relayError(res, upstream);
    res.setHeader("X-Interlace-Engine", engine.pod);
    res.json(clientResponse(ctx, await upstream.json(), pod, principalOf(res)));
  });
}

/**
 * The engine pod and engine-side id a routed response id names, after the
 * owner check (403 for another key's response). An id this router did not
 * issue is a 404 `not_found`, as the engine answers for an expired id.
 */
function routedResponse(ctx: AppRoutesContext, id: string, res: Response, what: string): { pod: string; engineResponseId: string } {
  const parsed = parseRoutedResponseId(id);
  if (parsed === null) throw notFound(`${what} ${id} is unknown (not a response id this router issued)`);
  refuseUnlessOwner(ctx, parsed, res, `response ${id} belongs to another API key: only the key that created it may read or continue it`);
  return { pod: parsed.pod, engineResponseId: parsed.engineSessionId };
}

/**
 * The engine to ask about a stored response: the one that generated it (the
 * only one that can cancel it while it runs), or, once that one is gone, any
 * ready engine of the app's pool, since every engine reads the shared store.
 */
function responseEngine(ctx: AppRoutesContext, config: { namespace: string; enginePool: { name: string } }, id: string, res: Response): { engine: EngineHeartbeat; engineResponseId: string; pod: string } {
  const routed = routedResponse(ctx, id, res, "response");
  const engine = ctx.engines.find(config.namespace, routed.pod) ?? anyReadyEngine(ctx, config.namespace, config.enginePool.name);
  return { engine, ...routed };
}

/** A ready engine of a pool, taken in turn; 503 when there is none. */
function anyReadyEngine(ctx: AppRoutesContext, namespace: string, pool: string): EngineHeartbeat {
  const ready = ctx.engines.loads(namespace, pool).flatMap((e) => ctx.engines.find(namespace, e.pod) ?? []);
  const engine = ready[ctx.nextTurn() % Math.max(1, ready.length)];
  if (engine === undefined) throw new HttpError(503, RouterCode.NoEngine, `EnginePool ${namespace}/${pool} has no ready engine to read the stored response`, { "Retry-After": String(ctx.retryAfterSeconds) });
  return engine;
}

/** An engine's response object with its ids (`id`, `previous_response_id`: both the engine's) as routed ids for `principal`. */
/**
 * A response object with routed ids: its own under `pod`, and its previous
 * one as the client named it when known (a follow-up placed on another
 * engine than its previous response's), else under `pod` too.
 */
function clientResponse(ctx: AppRoutesContext, payload: unknown, pod: string, principal: string, previousResponseId?: string): unknown {
  if (!isObject(payload)) return payload;
  const routed = (engineId: unknown): unknown => {
    if (typeof engineId !== "string") return engineId;
    const base = routedSessionId(pod, engineId);
    return routedResponseId(pod, engineId, ctx.owners.tag(base, principal));
  };
  return { ...payload, id: routed(payload["id"]), previous_response_id: previousResponseId ?? routed(payload["previous_response_id"]) };
}

/**
 * An OpenAI-compatible request sent by `send` (placed, or to a known engine)
 * and its answer proxied: errors with their status, JSON (through `json`),
 * or a stream relayed with backpressure (events through `rewrite`), ended
 * with `lost(pod)` when the engine stops before an event `ends` accepts.
 * The client going aborts the engine request.
 */
async function proxyOpenAi(
  ctx: AppRoutesContext,
  res: Response,
  config: { namespace: string; name: string },
  stream: boolean,
  send: (signal: AbortSignal) => Promise<{ engine: EngineHeartbeat; response: globalThis.Response; sentAt?: number; finished?: () => Promise<void> }>,
  shape: { lost: (pod: string) => string; json?: (payload: unknown) => unknown } & RelayOptions,
): Promise<void> {
  const key = `${config.namespace}/${config.name}`;
  const abort = new AbortController();
  const onClose = (): void => {
    if (!res.writableEnded) abort.abort();
  };
  res.on("close", onClose);
  track(ctx, key, +1);
  let placed;
  try {
    try {
      placed = await send(abort.signal);
    } catch (err) {
      if (abort.signal.aborted) return;
      throw err;
    }
    res.setHeader("X-Interlace-Engine", placed.engine.pod);
    setPickTiming(res, placed.sentAt);
    if (!placed.response.ok) return relayError(res, placed.response);
    if (!stream || placed.response.body === null) {
      const answer = shape.json !== undefined ? shape.json(await placed.response.json()) : Buffer.from(await placed.response.arrayBuffer());
      // Over before the client hears it: its next turn, through any replica, sees the engine's load without it.
      await placed.finished?.();
      if (shape.json !== undefined) res.status(200).json(answer);
      else res.status(200).type("application/json").send(answer);
      return;
    }
    startEventStream(res);
    const outcome = await relayEventStream(placed.response.body, res, shape);
    if (!outcome.clientGone && !outcome.completed) res.write(shape.lost(placed.engine.pod));
    res.end();
  } finally {
    // The completion is over: its engine's load no longer counts it, whatever its next heartbeat says.
    void placed?.finished?.();
    track(ctx, key, -1);
    res.off("close", onClose);
  }
}
