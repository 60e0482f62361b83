/**
 * @module The KV manager's public surface (the engine imports only this):
 * every operation on a sequence's cells — the trap (decide keep / swap /
 * recompute once from a calibrated cost model, and pause), resume, discard,
 * clear, move (compaction), prefix reuse in place, prefix fork, and the
 * validation pass of a drafted call (O2), whose rollback erases cells.
 *
 * Typical use by the engine:
 *   const kv = new KvManager({ policy: pool.kvPolicy, log });
 *   await kv.calibrate(freeSequence);                      // at start
 *   const { verdict, paused } = await kv.trap({ sequence, expectedWaitMs: expectedWaitMs(pending, Date.now()), kvPressure, release });
 *   ...                                                     // emit the `trap` event with verdict.decision
 *   const { resumeMs, evaluatedTokens } = await kv.resume(paused, sequence); // on the next interrupt; then inject it
 *   const { suffix } = await kv.reusePrefix(sequence, promptTokens);  // sync re-entry: evaluate only the suffix
 *   await kv.fork(newSequence, residentSequence, sharedTokens);       // share a prefix another sequence computed
 */
export { KvManager, type KvManagerOptions, type KvStats, type TrapOutcome, type TrapRequest } from "./kv-manager.js";
export {
  decideTrap,
  expectedWaitMs,
  type DecideTrapInput,
  type PendingCall,
  type TrapReason,
  type TrapVerdict,
} from "./trap-decision.js";
export {
  defaultCostModel,
  estimatePrefillMs,
  estimateStateBytes,
  estimateTrapCosts,
  type CostModel,
  type TrapCostEstimate,
} from "./cost-model.js";
export { costModelKey, readCachedCostModel, writeCachedCostModel, type CostModelKey } from "./cost-model-cache.js";
export { SharedCostModels, sharedCostModelKey, sharedCostModelEntry, type SharedCostModelKey } from "./shared-cost-models.js";
export { calibrateCostModel, fitLine, fitPrefill, theoreticalStateBytesPerToken, type CalibrateOptions } from "./calibrate.js";
export { discardPaused, pauseSequence, resumeSequence, type PausedSequence, type ResumeResult } from "./sequence-state.js";
export { FORK_TESTED_VERSION, forkPrefix, reusePrefix, type ForkResult, type PrefixReuse } from "./prefix.js";
export { chooseEviction, evictable, RETENTION_POLICIES, trapRule, type Eviction, type RetentionCandidate, type RetentionOptions, type RetentionPolicy } from "./retention.js";
export { validateDraft, type DraftValidation, type ValidateDraftOptions } from "./draft-validation.js";
