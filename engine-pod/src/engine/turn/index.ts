/**
 * @module Turn policies, one per calling mode, and the table that picks one
 * for a session. A new mode is a new file and a row here.
 */
import { ErrorCode, InterlaceError, type CallingMode } from "../../../../common/src/index.js";
import { ASYNC_POLICY } from "./async-policy.js";
import { SYNC_PARALLEL_POLICY } from "./sync-parallel-policy.js";
import { SYNC_POLICY } from "./sync-policy.js";
import type { TurnPolicy } from "./turn-policy.js";

export type { CallFailure, DoneReason, FinishReason, TurnCall, TurnDecision, TurnPolicy, TurnView } from "./turn-policy.js";
export { completionPolicy } from "./completion-policy.js";
export { ASYNC_POLICY, SYNC_POLICY, SYNC_PARALLEL_POLICY };

const SESSION_POLICIES: Readonly<Record<Exclude<CallingMode, "asyncNaive">, TurnPolicy>> = {
  async: ASYNC_POLICY,
  sync: SYNC_POLICY,
  syncParallel: SYNC_PARALLEL_POLICY,
};

/** The turn policy of a session mode (policies are stateless: one serves every session); unknown modes are refused. */
export function sessionTurnPolicy(mode: CallingMode): TurnPolicy {
  if (mode === "asyncNaive") {
    // A session mode of the openai backend only; here the client runs it over /v1/chat/completions.
    throw new InterlaceError(ErrorCode.BadRequest, 'mode "asyncNaive" is a session mode of --backend openai; on this engine run it client-side over /v1/chat/completions (interlace_raw_cml)');
  }
  const policy = Object.hasOwn(SESSION_POLICIES, mode) ? SESSION_POLICIES[mode] : undefined;
  if (policy === undefined) throw new InterlaceError(ErrorCode.BadRequest, `unknown mode "${String(mode)}"`);
  return policy;
}
