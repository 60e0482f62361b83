/**
 * @module Turn policies, one per calling mode, and the table that picks one
 * for a session. A new mode is a new file and a row here.
 */
import type { CallingMode } from "../../../../common/src/index.js";
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
};
