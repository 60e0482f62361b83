/**
 * @module The contract every tool implementation (builtin, http, mcp)
 * fulfils for the runner: run with the validated arguments under an abort
 * signal, resolve with the output text, reject with a {@link ToolFailure}
 * (or any error) the model can read.
 */

export interface ToolRunContext {
  signal: AbortSignal;
  callId: string;
  sessionId: string;
  /** Stable across redeliveries of the same call: forwarded as `Idempotency-Key`. */
  idempotencyKey: string;
  /** The tool is marked idempotent: transient failures may be retried. */
  idempotent: boolean;
}

export interface ToolImpl {
  run(args: Record<string, unknown>, ctx: ToolRunContext): Promise<string>;
  /** Releases connections (MCP sessions). */
  close?(): Promise<void>;
}

/** A failure the tool itself reports (HTTP error status, MCP `isError`). */
export class ToolFailure extends Error {
  override readonly name = "ToolFailure";
}
