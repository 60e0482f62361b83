/**
 * @module The KV manager the decode loop talks to: owns the calibrated cost
 * model, the pool-wide trap policy, the tmpfs swap directory and the trap
 * counters; pauses a trapped sequence (keep / swap / recompute) and resumes it.
 */
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence } from "node-llama-cpp";
import type { KvPolicy, Logger, TrapDecision } from "../../../common/src/index.js";
import { calibrateCostModel, type CalibrateOptions } from "./calibrate.js";
import { defaultCostModel, type CostModel } from "./cost-model.js";
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
}

export interface TrapOutcome {
  verdict: TrapVerdict;
  /** What was done: `paused.decision` (differs from `verdict.decision` only after a fallback to keep). */
  paused: PausedSequence;
  /** Time the pause itself took (save for swap, clearing for recompute), ms. */
  pauseMs: number;
  /** Time spent deciding, ms (the pure rule; microseconds). */
  decideMs: number;
}

export interface KvStats {
  trapsByDecision: Record<TrapDecision, number>;
  /** Sequences paused now, by decision. */
  pausedByDecision: Record<TrapDecision, number>;
  bytesSwappedOut: number;
  tokensRecomputed: number;
  /** Total ms spent pausing and resuming, by decision. */
  costMsByDecision: Record<TrapDecision, number>;
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
  };

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
   * Handles a trap: decides and pauses. With swap or recompute the sequence
   * is left empty (its slot may be lent out until resume). No `evaluate()`
   * generator may be active on it.
   */
  async trap(request: TrapRequest): Promise<TrapOutcome> {
    const d0 = performance.now();
    const verdict = this.decide({
      expectedWaitMs: request.expectedWaitMs,
      contextTokens: request.sequence.nextTokenIndex,
      kvPressure: request.kvPressure,
      ...(request.override === undefined ? {} : { override: request.override }),
    });
    const decideMs = performance.now() - d0;
    const paused = await pauseSequence(request.sequence, verdict.decision, this.swapDir);
    if (paused.decision === "keep" && paused.fallbackFrom !== undefined) {
      this.options.log?.warn({ decision: paused.fallbackFrom, reason: paused.fallbackReason }, "trap decision could not be carried out; kept the cells");
    }
    this.paused.add(paused);
    this.counters.trapsByDecision[paused.decision] += 1;
    this.counters.pausedByDecision[paused.decision] += 1;
    this.counters.costMsByDecision[paused.decision] += paused.pauseMs;
    if (paused.decision === "swap") this.counters.bytesSwappedOut += paused.bytes;
    this.options.log?.debug(
      { decision: verdict.decision, reason: verdict.reason, contextTokens: paused.contextTokens, pauseMs: paused.pauseMs },
      "trap paused",
    );
    return { verdict, paused, pauseMs: paused.pauseMs, decideMs };
  }

  /** Restores a paused sequence (into `target`, default the one it was paused from). */
  async resume(paused: PausedSequence, target?: LlamaContextSequence): Promise<ResumeResult> {
    if (!this.paused.delete(paused)) throw new Error("resume of a state this manager does not hold (already resumed?)");
    this.counters.pausedByDecision[paused.decision] -= 1;
    const result = await resumeSequence(paused, target);
    this.counters.costMsByDecision[paused.decision] += result.resumeMs;
    this.counters.tokensRecomputed += result.evaluatedTokens;
    return result;
  }

  /** Drops a paused state without resuming it (session cancelled). */
  async discard(paused: PausedSequence): Promise<void> {
    if (!this.paused.delete(paused)) return;
    this.counters.pausedByDecision[paused.decision] -= 1;
    await discardPaused(paused);
  }

  /** See `reusePrefix`. */
  reusePrefix(sequence: LlamaContextSequence, tokens: Parameters<typeof reusePrefix>[1]): Promise<PrefixReuse> {
    return reusePrefix(sequence, tokens);
  }

  /** See `forkPrefix`. */
  forkPrefix(target: LlamaContextSequence, source: LlamaContextSequence, upTo?: number): Promise<ForkResult> {
    return forkPrefix(target, source, upTo);
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
