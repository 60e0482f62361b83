/**
 * @module The KV manager the engine talks to for every operation on a
 * sequence's cells: the trap (decide keep / swap / recompute once, from the
 * calibrated cost model and the pool policy, and pause), resume, discard,
 * clear, move (compaction), prefix reuse in place and prefix fork from another
 * sequence. Owns the tmpfs swap directory and the KV counters.
 */
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { KvPolicy, Logger, TrapDecision } from "../../../common/src/index.js";
import { calibrateCostModel, type CalibrateOptions } from "./calibrate.js";
import { defaultCostModel, type CostModel } from "./cost-model.js";
import { validateDraft, type DraftValidation, type ValidateDraftOptions } from "./draft-validation.js";
import { forkPrefix, reusePrefix, type ForkResult, type PrefixReuse } from "./prefix.js";
import { discardPaused, pauseSequence, resumeSequence, type PausedSequence, type ResumeResult } from "./sequence-state.js";
import { decideTrap, type TrapVerdict } from "./trap-decision.js";

export interface KvManagerOptions {
  /** Pool-wide trap policy (EnginePool `kvPolicy`). Default `auto`. */
  policy?: KvPolicy;
  /** Cost model to start with (default: `defaultCostModel()` until `calibrate`). */
  costModel?: CostModel;
  /** Parent of the swap directory; default /dev/shm when present (tmpfs), else the OS temp dir. */
  swapRoot?: string;
  /** See `DecideTrapInput.pressureThreshold`. */
  pressureThreshold?: number;
  /** See `DecideTrapInput.hideFraction`. */
  hideFraction?: number;
  log?: Logger;
}

export interface TrapRequest {
  sequence: LlamaContextSequence;
  /** See `expectedWaitMs()`; `Infinity` when no call is pending. */
  expectedWaitMs: number;
  /** 0..1, see `DecideTrapInput.kvPressure`. */
  kvPressure: number;
  /** A session-level override; `auto` or absent defers to the pool policy. */
  override?: KvPolicy;
  /**
   * Called once the decision is taken and before the cells are touched, when
   * they are about to leave the sequence (swap, recompute): the caller closes
   * its `evaluate()` generator there. Not called for keep.
   */
  release?: () => Promise<void>;
}

export interface TrapOutcome {
  verdict: TrapVerdict;
  /** What was done: `paused.decision` (differs from `verdict.decision` only after a fallback to keep). */
  paused: PausedSequence;
  /** Time the pause itself took (save for swap, clearing for recompute), ms. */
  pauseMs: number;
}

export interface KvStats {
  trapsByDecision: Record<TrapDecision, number>;
  /** Sequences paused now, by decision. */
  pausedByDecision: Record<TrapDecision, number>;
  bytesSwappedOut: number;
  tokensRecomputed: number;
  /** Total ms spent pausing and resuming, by decision. */
  costMsByDecision: Record<TrapDecision, number>;
  /** Prefixes forked from another sequence, and the tokens they held (copied, or evaluated by the fallback). */
  prefixForks: number;
  prefixForkedTokens: number;
  /** Sequences moved to another slot (compaction). */
  moves: number;
  /** Kept pauses whose cells went to a waiting request (retention under pressure), by how they were given up. */
  evictionsByDecision: Record<TrapDecision, number>;
  /** Tokens re-evaluated on resume, by why the cells had gone: dropped at the trap, or given up to a waiting request. */
  tokensRecomputedByCause: { trap: number; eviction: number };
  /** Cells (tokens) held now by sessions paused with keep. */
  keptCells: number;
}

/** One per engine (one llama context). Not thread-safe by design: the decode loop is its only caller. */
export class KvManager {
  readonly swapDir: string;
  policy: KvPolicy;
  private model: CostModel;
  private readonly options: KvManagerOptions;
  private readonly paused = new Set<PausedSequence>();
  private readonly counters: KvStats = {
    trapsByDecision: { keep: 0, swap: 0, recompute: 0 },
    pausedByDecision: { keep: 0, swap: 0, recompute: 0 },
    bytesSwappedOut: 0,
    tokensRecomputed: 0,
    costMsByDecision: { keep: 0, swap: 0, recompute: 0 },
    prefixForks: 0,
    prefixForkedTokens: 0,
    moves: 0,
    evictionsByDecision: { keep: 0, swap: 0, recompute: 0 },
    tokensRecomputedByCause: { trap: 0, eviction: 0 },
    keptCells: 0,
  };
  /** Pauses that came from an eviction rather than a trap (for the recompute cause). */
  private readonly evicted = new WeakSet<PausedSequence>();

  constructor(options: KvManagerOptions = {}) {
    this.options = options;
    this.policy = options.policy ?? "auto";
    this.model = options.costModel ?? defaultCostModel();
    const root = options.swapRoot ?? (existsSync("/dev/shm") ? "/dev/shm" : tmpdir());
    this.swapDir = mkdtempSync(join(root, "interlace-kv-"));
    // A process that exits without close() (a crash, a killed test) must not
    // leave state files in host memory behind.
    process.once("exit", this.removeSwapDir);
  }

  private readonly removeSwapDir = (): void => {
    rmSync(this.swapDir, { recursive: true, force: true });
  };

  get costModel(): CostModel {
    return this.model;
  }

  /** Adopts a model measured earlier on the same model and settings (a cost model file), instead of calibrating. */
  adopt(model: CostModel): void {
    this.model = model;
  }

  /** Measures the loaded model on a free `sequence` (left empty) and adopts the result. */
  async calibrate(sequence: LlamaContextSequence, options: Omit<CalibrateOptions, "swapDir"> = {}): Promise<CostModel> {
    this.model = await calibrateCostModel(sequence, { ...options, swapDir: this.swapDir });
    this.options.log?.info({ costModel: this.model }, "kv cost model calibrated");
    return this.model;
  }

  /** The decision alone (pure), under the pool policy unless `override` is set. */
  decide(input: { expectedWaitMs: number; contextTokens: number; kvPressure: number; override?: KvPolicy }): TrapVerdict {
    const override = input.override !== undefined && input.override !== "auto" ? input.override : this.policy;
    return decideTrap({
      expectedWaitMs: input.expectedWaitMs,
      contextTokens: input.contextTokens,
      kvPressure: input.kvPressure,
      costModel: this.model,
      override,
      ...(this.options.pressureThreshold === undefined ? {} : { pressureThreshold: this.options.pressureThreshold }),
      ...(this.options.hideFraction === undefined ? {} : { hideFraction: this.options.hideFraction }),
    });
  }

  /**
   * Handles a trap: takes the decision (once) and pauses. With swap or
   * recompute the sequence is left empty (its slot may be lent out until
   * resume); `request.release` runs first so no `evaluate()` generator is
   * active on it.
   */
  async trap(request: TrapRequest): Promise<TrapOutcome> {
    const verdict = this.decide({
      expectedWaitMs: request.expectedWaitMs,
      contextTokens: request.sequence.nextTokenIndex,
      kvPressure: request.kvPressure,
      ...(request.override === undefined ? {} : { override: request.override }),
    });
    if (verdict.decision !== "keep") await request.release?.();
    const paused = await pauseSequence(request.sequence, verdict.decision, this.swapDir);
    if (paused.decision === "keep" && paused.fallbackFrom !== undefined) {
      this.options.log?.warn({ decision: paused.fallbackFrom, reason: paused.fallbackReason }, "trap decision could not be carried out; kept the cells");
    }
    this.paused.add(paused);
    if (paused.decision === "keep") this.counters.keptCells += paused.contextTokens;
    this.counters.trapsByDecision[paused.decision] += 1;
    this.counters.pausedByDecision[paused.decision] += 1;
    this.counters.costMsByDecision[paused.decision] += paused.pauseMs;
    if (paused.decision === "swap") this.counters.bytesSwappedOut += paused.bytes;
    this.options.log?.debug(
      { decision: verdict.decision, reason: verdict.reason, contextTokens: paused.contextTokens, pauseMs: paused.pauseMs },
      "trap paused",
    );
    return { verdict, paused, pauseMs: paused.pauseMs };
  }

  /**
   * Gives up the cells of a session paused with keep, for a request that
   * needs its sequence: swap or recompute, as a trap would have. A swap that
   * cannot be written falls back to recompute (the cells must go either way).
   * `release` runs first (no generator may be live on the sequence).
   */
  async evict(paused: PausedSequence, decision: "swap" | "recompute", release?: () => Promise<void>): Promise<PausedSequence> {
    if (paused.decision !== "keep" || !this.paused.delete(paused)) throw new Error("evict: not a kept pause this manager holds");
    this.unhold(paused);
    await release?.();
    let next = await pauseSequence(paused.sequence, decision, this.swapDir);
    if (next.decision === "keep") {
      this.options.log?.warn({ reason: next.fallbackReason }, "eviction swap failed; recomputing instead");
      next = await pauseSequence(paused.sequence, "recompute", this.swapDir);
    }
    this.paused.add(next);
    this.evicted.add(next);
    this.counters.pausedByDecision[next.decision] += 1;
    this.counters.evictionsByDecision[next.decision] += 1;
    this.counters.costMsByDecision[next.decision] += next.pauseMs;
    if (next.decision === "swap") this.counters.bytesSwappedOut += next.bytes;
    return next;
  }

  /** Restores a paused sequence (into `target`, default the one it was paused from). */
  async resume(paused: PausedSequence, target?: LlamaContextSequence): Promise<ResumeResult> {
    if (!this.paused.delete(paused)) throw new Error("resume of a state this manager does not hold (already resumed?)");
    this.unhold(paused);
    const result = await resumeSequence(paused, target);
    this.counters.costMsByDecision[paused.decision] += result.resumeMs;
    this.counters.tokensRecomputed += result.evaluatedTokens;
    this.counters.tokensRecomputedByCause[this.evicted.has(paused) ? "eviction" : "trap"] += result.evaluatedTokens;
    return result;
  }

  /** Drops a paused state without resuming it (session cancelled). */
  async discard(paused: PausedSequence): Promise<void> {
    if (!this.paused.delete(paused)) return;
    this.unhold(paused);
    await discardPaused(paused);
  }

  /** A pause leaves the manager's hands: its counts go down. */
  private unhold(paused: PausedSequence): void {
    this.counters.pausedByDecision[paused.decision] -= 1;
    if (paused.decision === "keep") this.counters.keptCells -= paused.contextTokens;
  }

  /** Keeps the longest prefix of `tokens` the sequence holds, erases the rest; see `reusePrefix`. */
  reusePrefix(sequence: LlamaContextSequence, tokens: readonly Token[]): Promise<PrefixReuse> {
    return reusePrefix(sequence, tokens);
  }

  /**
   * Makes `target` hold the first `upTo` tokens of `source` with llama.cpp's
   * sequence copy (a prefix computed once, shared), re-evaluating only if the
   * copy fails; see `forkPrefix`.
   */
  async fork(target: LlamaContextSequence, source: LlamaContextSequence, upTo: number): Promise<ForkResult> {
    const result = await forkPrefix(target, source, upTo);
    this.counters.prefixForks += 1;
    this.counters.prefixForkedTokens += result.tokens;
    if (result.method === "evaluate") this.options.log?.debug({ tokens: result.tokens }, "prefix fork fell back to evaluation");
    return result;
  }

  /**
   * Copies the first `upTo` tokens of `source` into `target` (the prefix
   * store): a copy or nothing, never an evaluation, and not counted as a
   * fork. False when the copy failed (the target is left empty).
   */
  async copyPrefix(target: LlamaContextSequence, source: LlamaContextSequence, upTo: number): Promise<boolean> {
    const result = await forkPrefix(target, source, upTo, { fallback: false });
    return result.method === "copy" && result.tokens === upTo;
  }

  /**
   * O2: evaluates the pending token and a drafted call body in one pass and
   * erases the rejected tail; see `validateDraft`. No generator may be live
   * on the sequence.
   */
  validateDraft(sequence: LlamaContextSequence, options: ValidateDraftOptions): Promise<DraftValidation> {
    return validateDraft(sequence, options);
  }

  /** Drops every cell of the sequence. */
  async clear(sequence: LlamaContextSequence): Promise<void> {
    if (sequence.nextTokenIndex > 0) await sequence.clearHistory();
  }

  /**
   * Moves a sequence's state into another sequence of the context (saved to
   * the swap directory and loaded back; cost linear in its tokens). The
   * source is left empty. No `evaluate()` generator may be active on it.
   */
  async move(source: LlamaContextSequence, target: LlamaContextSequence): Promise<{ ms: number; tokens: number }> {
    const t0 = performance.now();
    const paused = await pauseSequence(source, "swap", this.swapDir);
    if (paused.decision === "keep") throw new Error(`sequence move failed: ${paused.fallbackReason ?? "state not saved"}`);
    await resumeSequence(paused, target);
    this.counters.moves += 1;
    return { ms: performance.now() - t0, tokens: target.nextTokenIndex };
  }

  stats(): KvStats {
    return structuredClone(this.counters);
  }

  /** Discards every paused state and removes the swap directory. */
  async close(): Promise<void> {
    for (const paused of [...this.paused]) await this.discard(paused);
    this.removeSwapDir();
    process.removeListener("exit", this.removeSwapDir);
  }
}
