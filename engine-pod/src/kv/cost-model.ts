/**
 * @module The trap handler's cost model: how long keeping, swapping and
 * recomputing a sequence's KV state take on this engine, as plain data. Filled
 * by `calibrateCostModel` when the engine starts (measured on the loaded model)
 * or by `defaultCostModel` before that; read by the pure `decideTrap`.
 */

/**
 * Calibrated costs. All times in ms, sizes in bytes. Plain, serialisable data.
 *
 * - prefill (recompute) of n tokens: `prefillFixedMs + n·prefillMsPerToken + n²·prefillMsPerTokenSq`
 *   (attention makes re-evaluation grow faster than linearly; on CPU the
 *   quadratic term is small but not zero)
 * - state bytes of n tokens: `stateBytesFixed + n·stateBytesPerToken`
 * - save (swap out) of b bytes: `saveFixedMs + b / saveBytesPerMs`
 * - load (swap in) of b bytes:  `loadFixedMs + b / loadBytesPerMs`
 */
export interface CostModel {
  prefillFixedMs: number;
  prefillMsPerToken: number;
  prefillMsPerTokenSq: number;
  /** Measured prefill throughput of the largest calibration chunk (tokens/s), for reporting. */
  prefillTokensPerS: number;
  /** Median time of one decode step of a single sequence. */
  decodeMsPerToken: number;
  /** Measured bytes of saved state per context token. */
  stateBytesPerToken: number;
  /** Bytes of saved state independent of the token count (headers). */
  stateBytesFixed: number;
  /**
   * Bytes per token from the model's shape: 2 · n_layer · n_embd_kv · bytes per
   * KV element (K and V). Null when the model's metadata did not say.
   */
  theoreticalStateBytesPerToken: number | null;
  saveFixedMs: number;
  saveBytesPerMs: number;
  loadFixedMs: number;
  loadBytesPerMs: number;
  /** `measured` after calibration on the loaded model; `default` for the built-in guess. */
  source: "measured" | "default";
  /** ISO time of calibration. */
  calibratedAt: string;
  /** Wall time the calibration itself took. */
  calibrationMs: number;
  /** The raw measurements the fit came from (absent for the default model). */
  samples?: { tokens: number; prefillMs: number; stateBytes: number; saveMs: number; loadMs: number }[];
}

/** Estimated costs of each action for a context of `contextTokens`. */
export interface TrapCostEstimate {
  contextTokens: number;
  stateBytes: number;
  /** Save to host memory / tmpfs, ms (paid when pausing). */
  swapOutMs: number;
  /** Load back, ms (paid when resuming). */
  swapInMs: number;
  /** swapOutMs + swapInMs. */
  swapMs: number;
  /** Re-evaluation of the retained tokens, ms (paid when resuming; dropping is free). */
  recomputeMs: number;
}

/** Prefill time of `tokens` tokens under the model. */
export function estimatePrefillMs(model: CostModel, tokens: number): number {
  if (tokens <= 0) return 0;
  return model.prefillFixedMs + tokens * model.prefillMsPerToken + tokens * tokens * model.prefillMsPerTokenSq;
}

/** Saved-state size of `tokens` tokens. */
export function estimateStateBytes(model: CostModel, tokens: number): number {
  return model.stateBytesFixed + Math.max(0, tokens) * model.stateBytesPerToken;
}

/** Every action's cost for a context of `contextTokens` tokens. */
export function estimateTrapCosts(model: CostModel, contextTokens: number): TrapCostEstimate {
  const stateBytes = estimateStateBytes(model, contextTokens);
  const swapOutMs = model.saveFixedMs + stateBytes / model.saveBytesPerMs;
  const swapInMs = model.loadFixedMs + stateBytes / model.loadBytesPerMs;
  return {
    contextTokens,
    stateBytes,
    swapOutMs,
    swapInMs,
    swapMs: swapOutMs + swapInMs,
    recomputeMs: estimatePrefillMs(model, contextTokens),
  };
}

/**
 * A conservative guess used until calibration has run: the 512 × 8 F32 model
 * of docs/engine-facts.md on one CPU core (~620 prefill tok/s, ~11 ms/token decode,
 * ~1 GB/s save, ~1.7 GB/s load, ~0.4 ms fixed). Never used for decisions once
 * the engine has calibrated.
 */
export function defaultCostModel(): CostModel {
  const stateBytesPerToken = 2 * 8 * 512 * 2;
  return {
    prefillFixedMs: 2,
    prefillMsPerToken: 1.6,
    prefillMsPerTokenSq: 0.0001,
    prefillTokensPerS: 620,
    decodeMsPerToken: 11,
    stateBytesPerToken,
    stateBytesFixed: 64,
    theoreticalStateBytesPerToken: stateBytesPerToken,
    saveFixedMs: 0.4,
    saveBytesPerMs: 1e6,
    loadFixedMs: 0.4,
    loadBytesPerMs: 1.7e6,
    source: "default",
    calibratedAt: new Date(0).toISOString(),
    calibrationMs: 0,
  };
}
