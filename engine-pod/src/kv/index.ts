/**
 * @module The KV manager's public surface (the decode loop imports only this):
 * trap handling (decide keep / swap / recompute from a calibrated cost model,
 * pause and resume a sequence), prefix reuse and prefix fork.
 *
 * Typical use by the engine:
 *   const kv = new KvManager({ policy: pool.kvPolicy, log });
 *   await kv.calibrate(freeSequence);                      // at start
 *   const { verdict, paused, pauseMs } = await kv.trap({ sequence, expectedWaitMs: expectedWaitMs(pending, Date.now()), kvPressure });
 *   ...                                                     // emit the `trap` event with verdict.decision, pauseMs
 *   const { resumeMs, evaluatedTokens } = await kv.resume(paused);   // on the next interrupt; then inject it
 *   const { suffix } = await kv.reusePrefix(sequence, promptTokens); // sync re-entry: evaluate only the suffix
 *   await kv.forkPrefix(newSequence, residentSequence, systemPromptTokens); // share a resident prefix
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
export { calibrateCostModel, fitLine, fitPrefill, theoreticalStateBytesPerToken, type CalibrateOptions } from "./calibrate.js";
export { discardPaused, pauseSequence, resumeSequence, type PausedSequence, type ResumeResult } from "./sequence-state.js";
export { FORK_TESTED_VERSION, forkPrefix, reusePrefix, type ForkResult, type PrefixReuse } from "./prefix.js";
