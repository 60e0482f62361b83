/**
 * @module HTTP errors as every component sends them: one body shape
 * (`{"error": {"code", "message", "type", "param"}}`, OpenAI's `ErrorResponse`
 * — OpenAI SDKs read `message`, our clients match on `code`; `param` is
 * required there and null here, the message naming the field), the status each {@link ErrorCode} maps to, and the
 * translation of body-parser failures (invalid JSON, oversized body).
 */
import type { Response } from "express";
import { ErrorCode, InterlaceError } from "./errors.js";

/** The HTTP status of each code; a code not listed is a 500. */
const STATUS: Readonly<Record<string, number>> = {
  [ErrorCode.BadRequest]: 400,
  [ErrorCode.InvalidJson]: 400,
  [ErrorCode.UnknownTool]: 400,
  [ErrorCode.InvalidArguments]: 400,
  [ErrorCode.MalformedCall]: 400,
  [ErrorCode.ContextOverflow]: 400,
  [ErrorCode.Unauthorized]: 401,
  [ErrorCode.Forbidden]: 403,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.SessionFinished]: 409,
  [ErrorCode.Cancelled]: 409,
  [ErrorCode.EngineLost]: 410,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.Capacity]: 429,
  [ErrorCode.Internal]: 500,
  [ErrorCode.UpstreamUnavailable]: 502,
  [ErrorCode.UpstreamError]: 502,
  [ErrorCode.NoRunners]: 503,
  [ErrorCode.NotReady]: 503,
  [ErrorCode.Draining]: 503,
  [ErrorCode.NoEngine]: 503,
  [ErrorCode.UpstreamTimeout]: 504,
};

/** An error with its HTTP status and any headers it must carry (`Retry-After`). */
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

  /** The error for `code` with the status the code maps to. */
  static of(code: string, message: string, headers?: Record<string, string>): HttpError {
    return new HttpError(STATUS[code] ?? 500, code, message, headers);
  }
}

export const badRequest = (message: string): HttpError => HttpError.of(ErrorCode.BadRequest, message);
export const notFound = (message: string): HttpError => HttpError.of(ErrorCode.NotFound, message);

export interface ErrorContext {
  /** `Retry-After` seconds for a 429 whose cause names none. */
  retryAfterSeconds: number;
}

/** Any thrown value → an {@link HttpError} (unknown errors become 500 internal). */
export function toHttpError(err: unknown, ctx: ErrorContext = { retryAfterSeconds: 1 }): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof InterlaceError) {
    const headers: Record<string, string> = err.code === ErrorCode.Capacity ? { "Retry-After": String(err.retryAfterSeconds ?? ctx.retryAfterSeconds) } : {};
    return HttpError.of(err.code, err.message, headers);
  }
  return fromBodyParser(err) ?? new HttpError(500, ErrorCode.Internal, err instanceof Error ? err.message : String(err));
}

/** body-parser errors carry `type` (and `limit`/`length` for oversized bodies). */
function fromBodyParser(err: unknown): HttpError | undefined {
  if (err === null || typeof err !== "object" || !("type" in err)) return undefined;
  const e = err as { type: unknown; message?: string; limit?: number; length?: number; status?: number };
  switch (e.type) {
    case "entity.parse.failed":
      return new HttpError(400, ErrorCode.InvalidJson, `request body is not valid JSON: ${e.message ?? "parse error"}`);
    case "entity.too.large":
      return new HttpError(
        413,
        ErrorCode.PayloadTooLarge,
        `request body of ${e.length ?? "?"} bytes exceeds the limit of ${e.limit ?? "?"} bytes (--max-body-bytes)`,
      );
    case "encoding.unsupported":
    case "charset.unsupported":
      return new HttpError(415, ErrorCode.BadRequest, e.message ?? "unsupported body encoding");
    case "request.aborted":
      return new HttpError(400, ErrorCode.BadRequest, "request aborted by the client");
    default:
      return typeof e.status === "number" && e.status >= 400 && e.status < 500
        ? new HttpError(e.status, ErrorCode.BadRequest, e.message ?? "bad request")
        : undefined;
  }
}

export function errorBody(err: HttpError): { error: { code: string; message: string; type: string; param: null } } {
  return { error: { code: err.code, message: err.message, type: err.status >= 500 ? "server_error" : "invalid_request_error", param: null } };
}

/** Sends an error response (headers included), unless the response already started. */
export function sendError(res: Response, err: HttpError): void {
  if (res.headersSent) return;
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  res.status(err.status).json(errorBody(err));
}
