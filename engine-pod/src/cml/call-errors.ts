/**
 * @module Turning a call that failed to parse or validate into an error
 * interrupt the model can read: `[INTR] id [HEAD] error: ... [END]`.
 */
import { formatInterruptBlock } from "../../../common/src/index.js";
import { formatErrorLine } from "../../../common/src/wire/index.js";
import type { ParsedCall } from "./monitor-api.js";

/** A failed parse, as returned by `parseCallBody`. */
export type CallFailure = Extract<ParsedCall, { ok: false }>;

/**
 * The interrupt value for a failed call: one line starting with `error:` and
 * the failure's message (which begins with its code), e.g.
 * `error: invalid_arguments: "a" must be number`.
 */
export function formatCallError(failure: CallFailure | { code: string; message: string }): string {
  return formatErrorLine(failure.code, failure.message);
}

/** The whole error interrupt block for call `id`. */
export function formatErrorInterrupt(id: string, failure: CallFailure | { code: string; message: string }): string {
  return formatInterruptBlock(id, formatCallError(failure));
}
