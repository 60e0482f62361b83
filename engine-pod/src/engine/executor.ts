/**
 * @module The Executor interface, declared and owned by the engine that calls it: where a call block goes
 * the moment its `[END]` is sampled. Implementations: the in-process executor
 * (builtin tools, tests and the local demo) and the NATS executor (tool pools).
 * Every implementation runs the shared conformance suite in `test/executor/`.
 */
import type { ToolSpec } from "../../../common/src/index.js";

/** A validated call, ready to run. Plain data. */
export interface ToolCall {
  /** Unique per session; the id the model sees in `[INTR] id [HEAD] ...`. */
  id: string;
  sessionId: string;
  tool: string;
  arguments: Record<string, unknown>;
  spec: ToolSpec;
  /** Absolute deadline, epoch ms (Date.now()). */
  deadline: number;
}

/** The outcome of a call. Errors are values: the model reads them as an error interrupt. */
export interface ToolResult {
  callId: string;
  ok: boolean;
  /** Text the model sees after `[HEAD]`: the tool output, or a readable error line. */
  output: string;
  error?: { code: string; message: string };
  /** The tool's own run time, when the executor knows it. */
  runMs?: number;
}

export interface Executor {
  /**
   * Starts a call and resolves with its result. Never rejects: failures,
   * timeouts and cancellation resolve with `ok: false`. Must not block the
   * caller (the decode loop) beyond publishing the call.
   */
  execute(call: ToolCall, signal?: AbortSignal): Promise<ToolResult>;
  /** Releases connections; pending calls resolve as cancelled. */
  close(): Promise<void>;
}
