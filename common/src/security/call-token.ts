/**
 * @module Results bound to calls: the engine puts a fresh 128-bit random
 * token into every call message; only the runners of the call's pool can read
 * it (their work queue is theirs alone), and the runner echoes it in the
 * result. The engine accepts a result only if its token equals the pending
 * call's, so a result forged by anyone else — another pool's runner, a client
 * that can publish on interrupt subjects — or replayed into another session
 * is dropped and counted (`interlace_executor_completions_dropped_total{reason="forged"}`).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

/** A fresh call token (32 hex characters). */
export function newCallToken(): string {
  return randomBytes(16).toString("hex");
}

/** Constant-time comparison of a received token with the expected one. */
export function callTokenMatches(expected: string, received: string | undefined): boolean {
  if (received === undefined || received.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(expected), Buffer.from(received));
}
