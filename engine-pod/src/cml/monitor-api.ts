/**
 * @module Contract between the decode loop and the CML module: the incremental
 * token monitor, call-body parsing/validation and the call grammar. The CML
 * module implements these (see `cml/index.ts`); the engine only consumes them.
 */
import type { CmlMarker, ToolSpec } from "../../../common/src/index.js";

/** What the monitor reports after each sampled token. */
export type MonitorEvent =
  /** Plain text outside any block, safe to stream (never a partial marker). */
  | { type: "text"; text: string }
  /** `[CALL]` seen: a critical section begins. */
  | { type: "call_start" }
  /**
   * With `streamCallBody`: the open call block's body begins — at `[HEAD]`
   * (with the id before it), or at the first `{` or `(` of a block without
   * one — and then its text as it arrives (markers never included).
   */
  | { type: "call_body"; id?: string }
  | { type: "call_text"; text: string }
  /** A complete call block (`[END]` seen); the critical section ends. */
  | { type: "call"; id?: string; body: string }
  /** `[TRAP] [END]` seen. */
  | { type: "trap" }
  /** A block the grammar would not allow (e.g. `[END]` with nothing open, a model-emitted `[INTR]`). */
  | { type: "malformed"; reason: string; raw: string };

export interface TokenMonitor {
  /** Feed one sampled token (its id and its detokenized text). */
  push(token: number, text: string): MonitorEvent[];
  /** True between `[CALL]` and its `[END]` (and inside `[TRAP] ... [END]`). */
  readonly inCriticalSection: boolean;
  /**
   * True outside any block with no partial marker held back: the only point
   * where injecting interrupt tokens cannot split a model's marker in two.
   */
  readonly safeToInject: boolean;
  /** Text currently held back because it may be the start of a split marker. */
  readonly heldText: string;
  /** Releases text held back (it may be the start of a split marker) at end of stream; an open block becomes `malformed`. */
  flush(): MonitorEvent[];
}

export interface MonitorOptions {
  /** Token ids of markers when the model has them as single control tokens. */
  markerTokens?: ReadonlyMap<number, CmlMarker>;
  /**
   * Also recognise markers spelled as plain text (possibly split across
   * tokens). Defaults to true exactly when `markerTokens` is empty or absent:
   * with control tokens, marker-looking text stays text so it cannot be forged.
   */
  textMarkers?: boolean;
  /** Report a call's body as it is generated (`call_body`, `call_text`): for clients that stream arguments. */
  streamCallBody?: boolean;
}

export type ParsedCall =
  | { ok: true; tool: string; arguments: Record<string, unknown>; style: "json" | "python" }
  | { ok: false; code: "malformed_call" | "unknown_tool" | "invalid_arguments"; message: string };
