/**
 * @module The session API: `POST /v1/sessions`, `GET /v1/sessions/{id}/events`
 * (server-sent events, past events replayed first, ending after `done`),
 * `POST /v1/sessions/{id}/interrupts` and `DELETE /v1/sessions/{id}`.
 * A client that disconnects from the event stream before `done` cancels its
 * session, so the sequence and its KV cells are freed at once.
 */
import { randomUUID } from "node:crypto";
import type { Express, NextFunction, Request, RequestHandler, Response } from "express";
import { ErrorCode, type Logger, type SessionEvent } from "../../../common/src/index.js";
import { parsePrefixRole, PREFIX_ROLE_HEADER } from "../../../common/src/protocol/index.js";
import type { Engine } from "../engine/index.js";
import type { EngineMetrics } from "../metrics/index.js";
import { HttpError, SESSION_FINISHED } from "./http-errors.js";
import type { ToolCatalog } from "./resolve-tools.js";
import { openSse } from "./sse.js";
import { parseCreateSessionRequest, parseInterruptRequest } from "./validate-request.js";
import { forbid, principalOf } from "../../../common/src/security/http-auth.js";

export interface SessionRoutesContext {
  engine: () => Engine;
  catalog: ToolCatalog;
  maxPromptBytes: number;
  metrics: EngineMetrics;
  log: Logger;
  /** Sessions opened here that have not finished (cancelled at shutdown). */
  live: Set<string>;
}

function sessionId(req: Request): string {
  const id = req.params["id"];
  return typeof id === "string" ? id : "";
}

function isDone(events: readonly SessionEvent[]): boolean {
  return events.length > 0 && events[events.length - 1]!.type === "done";
}

export function mountSessionRoutes(app: Express, json: RequestHandler, ctx: SessionRoutesContext): void {
  /** Session → the principal (API key) that opened it: only it may read, interrupt or cancel the session. */
  const owners = new Map<string, string>();
  const owned = (req: Request, res: Response, next: NextFunction): void => {
    const id = sessionId(req);
    const owner = owners.get(id);
    if (owner !== undefined && owner !== principalOf(res)) return forbid(res, `session "${id}" belongs to another API key`);
    next();
  };
  app.post("/v1/sessions", json, (req: Request, res: Response) => {
    const request = parseCreateSessionRequest(req.body, ctx.catalog, { maxPromptBytes: ctx.maxPromptBytes });
    // The placing router's word on the app's home (absent from other callers: home).
    const prefixRole = parsePrefixRole(req.get(PREFIX_ROLE_HEADER));
    if (prefixRole instanceof Error) throw new HttpError(400, ErrorCode.BadRequest, prefixRole.message);
    const session = ctx.engine().createSession(request, prefixRole !== undefined ? { prefixRole } : {});
    ctx.live.add(session.id);
    owners.set(session.id, principalOf(res));
    void session.finished.finally(() => {
      ctx.live.delete(session.id);
      // Keep the owner a while: the event stream of a finished session stays readable.
      setTimeout(() => owners.delete(session.id), 600_000).unref();
    });
    ctx.metrics.observeSession(session);
    ctx.log.info(
      { session: session.id, mode: request.mode ?? "async", tools: request.tools?.map((t) => t.name), scripted: request.policy !== undefined },
      "session opened",
    );
    res.status(201).json({ id: session.id, eventsUrl: `/v1/sessions/${session.id}/events` });
  });

  app.get("/v1/sessions/:id/events", owned, (req: Request, res: Response) => {
    const id = sessionId(req);
    const engine = ctx.engine();
    const session = engine.getSession(id);
    if (session === undefined) throw HttpError.of(ErrorCode.NotFound, `no session "${id}"`);
    // Resume after the last event a reconnecting client saw (event ids are indexes).
    const lastSeen = Number(req.get("Last-Event-ID") ?? -1);
    const from = Number.isInteger(lastSeen) && lastSeen >= -1 ? lastSeen + 1 : 0;
    const sse = openSse(req, res);
    let index = 0;
    const send = (event: SessionEvent): void => {
      const i = index++;
      if (i >= from) sse.send(event, { event: event.type, id: i });
    };
    const past = session.events;
    for (const event of past) send(event);
    if (isDone(past)) {
      sse.end();
      return;
    }
    let finished = false;
    const unsubscribe = session.subscribe((event) => {
      send(event);
      if (event.type === "done") {
        finished = true;
        unsubscribe();
        sse.end();
      }
    });
    sse.onClientClose(() => {
      unsubscribe();
      if (finished || isDone(session.events)) return;
      // Nobody is listening: end the session so its sequence and KV cells are freed.
      const cancelled = engine.cancel(id);
      ctx.log.info({ session: id, cancelled }, "event stream closed by the client before done; session cancelled");
    });
  });

  app.post("/v1/sessions/:id/interrupts", owned, json, (req: Request, res: Response) => {
    const id = sessionId(req);
    const engine = ctx.engine();
    const session = engine.getSession(id);
    if (session === undefined) throw HttpError.of(ErrorCode.NotFound, `no session "${id}"`);
    const body = parseInterruptRequest(req.body, ctx.maxPromptBytes);
    const interruptId = body.id ?? `user_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
    const kind = body.kind ?? "user";
    if (body.maxQueued !== undefined && engine.queuedInterrupts(id) >= body.maxQueued) {
      throw HttpError.of(ErrorCode.Capacity, `session "${id}" already has ${body.maxQueued} interrupts queued (maxQueued); retry once some are injected`);
    }
    if (!engine.interrupt(id, { id: interruptId, kind, value: body.value })) {
      if (engine.getSession(id) === undefined) throw HttpError.of(ErrorCode.NotFound, `no session "${id}"`);
      throw HttpError.of(SESSION_FINISHED, `session "${id}" has finished; it takes no more interrupts`);
    }
    ctx.log.info({ session: id, interrupt: interruptId, kind }, "interrupt queued");
    res.status(202).json({ id: interruptId, sessionId: id, kind });
  });

  app.delete("/v1/sessions/:id", owned, (req: Request, res: Response) => {
    const id = sessionId(req);
    const engine = ctx.engine();
    const session = engine.getSession(id);
    if (session === undefined || !engine.cancel(id)) throw HttpError.of(ErrorCode.NotFound, `no session "${id}"`);
    const alreadyDone = isDone(session.events);
    ctx.log.info({ session: id, alreadyDone }, "session cancelled by request");
    res.status(200).json({ id, status: alreadyDone ? "finished" : "cancelled" });
  });
}
