/**
 * @module Error codes that cross process boundaries (HTTP bodies, NATS headers,
 * error interrupts). Each is stable: clients and models may match on it.
 */
export const ErrorCode = {
  BadRequest: "bad_request",
  InvalidJson: "invalid_json",
  UnknownTool: "unknown_tool",
  InvalidArguments: "invalid_arguments",
  MalformedCall: "malformed_call",
  ToolFailed: "tool_failed",
  ToolTimeout: "tool_timeout",
  NoRunners: "no_runners",
  MaxDeliveries: "max_deliveries",
  /** A non-idempotent tool was started but its result was lost (its runner died): it is not run a second time. */
  OutcomeUnknown: "outcome_unknown",
  Unauthorized: "unauthorized",
  Forbidden: "forbidden",
  PayloadTooLarge: "payload_too_large",
  ContextOverflow: "context_overflow",
  Capacity: "capacity",
  NotFound: "not_found",
  Cancelled: "cancelled",
  Internal: "internal",
  /** An upstream OpenAI-compatible server could not be reached (502). */
  UpstreamUnavailable: "upstream_unavailable",
  /** An upstream server failed or sent a malformed stream (502). */
  UpstreamError: "upstream_error",
  /** An upstream request ran past its deadline (504). */
  UpstreamTimeout: "upstream_timeout",
  /** A session that already finished cannot take interrupts (409). */
  SessionFinished: "session_finished",
  /** The server is starting, loading its model or shutting down (503). */
  NotReady: "not_ready",
  /** The engine is draining (shutting down after its live sessions): no new sessions (503); a session still running when the grace period ends gets an `error` event with this code. */
  Draining: "draining",
  /** The app's pool has no engine with a fresh heartbeat (503). */
  NoEngine: "no_engine",
  /** The engine that owns a session stopped (410 on requests, an `error` event on open streams). */
  EngineLost: "engine_lost",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Base error with a fixed code, a name and an optional cause (nats.js/undici style). */
export class InterlaceError extends Error {
  override readonly name: string = "InterlaceError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options);
    if (options?.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
  }
  /** With `capacity`: when to retry, seconds (an upstream's own `Retry-After`); else the server's default. */
  readonly retryAfterSeconds?: number;
}
