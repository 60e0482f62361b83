/**
 * @module The router's HTTP errors: the engine's body shape
 * (`{"error": {"code", "message", "type"}}`), router-specific codes, and the
 * translation of body-parser failures (invalid JSON, oversized body).
 */
import type { Response } from "express";
import { ErrorCode, InterlaceError } from "../../common/src/index.js";

/** Codes the router adds to the shared {@link ErrorCode}s. */
export const RouterCode = {
  /** The app's pool has no engine with a fresh heartbeat (503). */
  NoEngine: "no_engine",
  /** The engine that owns a session stopped (410 on requests, an `error` event on open streams). */
  EngineLost: "engine_lost",
  /** The AgentApp disallows what was asked (user interrupts off: 403). */
  Forbidden: "forbidden",
  /** The router is starting or shutting down (503). */
  NotReady: "not_ready",
} as const;

export class HttpError extends Error {
  override readonly name = "HttpError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string): HttpError => new HttpError(400, ErrorCode.BadRequest, message);
export const notFound = (message: string): HttpError => new HttpError(404, ErrorCode.NotFound, message);

export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof InterlaceError) return new HttpError(err.code === ErrorCode.PayloadTooLarge ? 413 : 400, err.code, err.message);
  if (err !== null && typeof err === "object" && "type" in err) {
    const e = err as { type: unknown; message?: string; limit?: number; length?: number; status?: number };
    if (e.type === "entity.parse.failed") return new HttpError(400, ErrorCode.InvalidJson, `request body is not valid JSON: ${e.message ?? "parse error"}`);
    if (e.type === "entity.too.large") {
      return new HttpError(413, ErrorCode.PayloadTooLarge, `request body of ${e.length ?? "?"} bytes exceeds the limit of ${e.limit ?? "?"} bytes (--max-body-bytes)`);
    }
    if (typeof e.status === "number" && e.status >= 400 && e.status < 500) return new HttpError(e.status, ErrorCode.BadRequest, e.message ?? "bad request");
  }
  return new HttpError(500, ErrorCode.Internal, err instanceof Error ? err.message : String(err));
}

export function sendError(res: Response, err: HttpError): void {
  if (res.headersSent) return;
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  res.status(err.status).json({ error: { code: err.code, message: err.message, type: err.status >= 500 ? "server_error" : "invalid_request_error" } });
}
