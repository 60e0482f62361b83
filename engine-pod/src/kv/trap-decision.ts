/**
 * @module The trap handler's decision (AsyncLM §5.4) as a pure function: on
 * `[TRAP] [END]` a sequence pauses until its next interrupt; should its KV
 * state stay resident (keep), go to host memory (swap), or be dropped and
 * re-evaluated on resume (recompute)?
 */
import type { KvPolicy, TrapDecision } from "../../../common/src/index.js";
import { estimateTrapCosts, type CostModel, type TrapCostEstimate } from "./cost-model.js";

export interface DecideTrapInput {
  /**
   * Time until the next interrupt is expected, ms: the earliest pending call's
   * `estimatedLatencyMs` minus its elapsed time (see `expectedWaitMs`).
   * `Infinity` when nothing is pending (only a user interrupt can wake it).
   */
  expectedWaitMs: number;
  /** Tokens in the sequence's KV state. */
  contextTokens: number;
  costModel: CostModel;
  /**
   * How scarce KV memory is, 0..1: the fraction of sequence slots (or KV cells)
   * in use by live sessions, paused ones included.
   */
  kvPressure: number;
  /** Pool-wide (or session) override; `auto` applies the rule. */
  override: KvPolicy;
  /** Pressure below which memory is not worth freeing. Default 0.5. */
  pressureThreshold?: number;
  /**
   * Fraction of the expected wait the chosen action may use, so that estimate
   * errors do not make it late. Default 0.8.
   */
  hideFraction?: number;
}

/** Why a decision was taken (stable strings; also a metrics label). */
export type TrapReason =
  | "override"
  | "wait_overdue"
  | "no_pressure"
  | "cost_exceeds_wait"
  | "swap_cheaper"
  | "recompute_cheaper";

export interface TrapVerdict {
  decision: TrapDecision;
  reason: TrapReason;
  /** The estimates the rule compared. */
  estimate: TrapCostEstimate;
  /** Estimated time cost of the decision, ms (0 for keep). */
  estimatedCostMs: number;
  /**
   * How long before the expected interrupt the state should start being
   * restored so resuming adds no latency (swap-in or recompute time; 0 for keep).
   */
  restoreLeadMs: number;
}

/**
 * The rule. With n = context tokens, W = expected wait, f = hideFraction,
 *   S(n) = save(n) + load(n)                          (linear in n: bytes / bandwidth + fixed)
 *   R(n) = p0 + p1·n + p2·n²                          (prefill of the retained tokens)
 * decide
 *   override ≠ auto                      → override
 *   W ≤ 0 (the interrupt is due)         → keep   (anything else only adds latency)
 *   kvPressure < pressureThreshold       → keep   (nobody needs the cells)
 *   min(S, R) > f·W                      → keep   (the cost cannot be hidden in the wait)
 *   S ≤ R                                → swap
 *   otherwise                            → recompute
 * Keep costs no time but holds the cells for W; swap and recompute free them
 * for the wait at the price of S or R, which the wait hides. Ties go to swap:
 * recompute spends the compute that the other sequences in the batch decode
 * with, swap only memory bandwidth.
 */
export function decideTrap(input: DecideTrapInput): TrapVerdict {
  const estimate = estimateTrapCosts(input.costModel, input.contextTokens);
  const verdict = (decision: TrapDecision, reason: TrapReason): TrapVerdict => ({
    decision,
    reason,
    estimate,
    estimatedCostMs: decision === "swap" ? estimate.swapMs : decision === "recompute" ? estimate.recomputeMs : 0,
    restoreLeadMs: decision === "swap" ? estimate.swapInMs : decision === "recompute" ? estimate.recomputeMs : 0,
  });
  if (input.override !== "auto") return verdict(input.override, "override");
  const wait = input.expectedWaitMs;
  if (!(wait > 0)) return verdict("keep", "wait_overdue");
  if (input.kvPressure < (input.pressureThreshold ?? 0.5)) return verdict("keep", "no_pressure");
  const cheapest = Math.min(estimate.swapMs, estimate.recomputeMs);
  if (cheapest > (input.hideFraction ?? 0.8) * wait) return verdict("keep", "cost_exceeds_wait");
  return estimate.swapMs <= estimate.recomputeMs ? verdict("swap", "swap_cheaper") : verdict("recompute", "recompute_cheaper");
}

/** A call the paused sequence is waiting on. */
export interface PendingCall {
  /** When the call was dispatched, epoch ms. */
  startedAt: number;
  /** The tool's `estimatedLatencyMs`; absent → `defaultLatencyMs`. */
  estimatedLatencyMs?: number;
}

/**
 * Expected wait until the next interrupt: the earliest pending call's
 * estimated completion minus now, floored at 0; `Infinity` when none pend.
 */
export function expectedWaitMs(pending: readonly PendingCall[], now: number, defaultLatencyMs = 1000): number {
  let wait = Infinity;
  for (const call of pending) {
    const remaining = call.startedAt + (call.estimatedLatencyMs ?? defaultLatencyMs) - now;
    wait = Math.min(wait, Math.max(0, remaining));
  }
  return wait;
}
