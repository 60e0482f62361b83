/**
 * @module Turn policies, one per calling mode, and the table that picks one
 * for a session. A new mode is a new file and a row here.
 */
import { ErrorCode, InterlaceError, type CallingMode } from "../../../../common/src/index.js";
import { AsyncTurnPolicy } from "./async-policy.js";
import { SyncParallelTurnPolicy } from "./sync-parallel-policy.js";
import { SyncTurnPolicy } from "./sync-policy.js";
import type { TurnPolicy } from "./turn-policy.js";

export type { CallFailure, DoneReason, TurnCall, TurnOps, TurnPolicy } from "./turn-policy.js";
export { CompletionTurnPolicy, type FinishReason } from "./completion-policy.js";

/** A fresh turn policy (policies may hold per-turn state) for each session mode. */
export const SESSION_TURN_POLICIES: Readonly<Record<CallingMode, () => TurnPolicy>> = {
  async: () => new AsyncTurnPolicy(),
  sync: () => new SyncTurnPolicy(),
  syncParallel: () => new SyncParallelTurnPolicy(),
  // A session mode of the openai backend only; here the client runs it over /v1/chat/completions.
  asyncNaive: () => {
    throw new InterlaceError(ErrorCode.BadRequest, 'mode "asyncNaive" is a session mode of --backend openai; on this engine run it client-side over /v1/chat/completions (interlace_raw_cml)');
  },
};
