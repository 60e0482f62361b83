/**
 * @module Pausing and resuming a sequence's KV state for the trap handler:
 * keep (cells stay resident), swap (state saved to a tmpfs file, cells
 * cleared; loaded back on resume) and recompute (cells cleared, the retained
 * token list re-evaluated on resume). After `resumeSequence` the sequence holds
 * exactly the tokens it held when paused, so its greedy continuation is the
 * one it would have had without the pause.
 *
 * Preconditions (the decode loop's side): no `evaluate()` generator is active
 * on the sequence when it is paused with swap or recompute (return it first);
 * the last sampled token that was not yet fed back stays with the caller and
 * is evaluated after resume, as after any generator restart.
 */
import { unlink } from "node:fs/promises";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { TrapDecision } from "../../../common/src/index.js";

/** A paused sequence's state, as the trap handler holds it until resume. */
export type PausedSequence =
  | {
      readonly decision: "keep";
      /** The sequence still holding the cells; resume must target it. */
      readonly sequence: LlamaContextSequence;
      readonly contextTokens: number;
      readonly pauseMs: number;
      /** Set when another decision could not be carried out (e.g. the swap file could not be written). */
      readonly fallbackFrom?: "swap";
      readonly fallbackReason?: string;
    }
  | {
      readonly decision: "swap";
      /** The sequence it was paused from; the default resume target. */
      readonly origin: LlamaContextSequence;
      /** The tmpfs file holding the state (tokens included). */
      readonly file: string;
      readonly bytes: number;
      readonly contextTokens: number;
      readonly pauseMs: number;
    }
  | {
      readonly decision: "recompute";
      /** The sequence it was paused from; the default resume target. */
      readonly origin: LlamaContextSequence;
      /** The tokens to re-evaluate on resume. */
      readonly tokens: readonly Token[];
      readonly contextTokens: number;
      readonly pauseMs: number;
    };

export interface ResumeResult {
  decision: TrapDecision;
  /** Time spent restoring (load, or re-evaluation), ms. */
  resumeMs: number;
  /** Tokens evaluated again (recompute only); count them as prefilled. */
  evaluatedTokens: number;
  /** Tokens now in the sequence (equals the paused context). */
  contextTokens: number;
}

/**
 * Pauses `sequence` with `decision`. For swap, the state is written to a new
 * file under `swapDir` (a tmpfs such as /dev/shm keeps it in host memory).
 * After swap or recompute the sequence holds no tokens: its slot may be
 * disposed or lent to another session, and the state resumed into any
 * sequence of the same context.
 */
export async function pauseSequence(
  sequence: LlamaContextSequence,
  decision: TrapDecision,
  swapDir: string,
): Promise<PausedSequence> {
  const start = performance.now();
  const contextTokens = sequence.nextTokenIndex;
  switch (decision) {
    case "keep":
      return { decision, sequence, contextTokens, pauseMs: performance.now() - start };
    case "swap": {
      const file = join(swapDir, `${randomUUID()}.kv`);
      let fileSize: number;
      try {
        ({ fileSize } = await sequence.saveStateToFile(file));
      } catch (err) {
        // A full tmpfs (a container's 64 MB /dev/shm) must not lose the session:
        // the state is intact in the cells, so keep it there.
        await unlink(file).catch(() => undefined);
        return { decision: "keep", sequence, contextTokens, pauseMs: performance.now() - start, fallbackFrom: "swap", fallbackReason: String(err) };
      }
      await sequence.clearHistory();
      return { decision, origin: sequence, file, bytes: fileSize, contextTokens, pauseMs: performance.now() - start };
    }
    case "recompute": {
      const tokens = sequence.contextTokens.slice();
      await sequence.clearHistory();
      return { decision, origin: sequence, tokens, contextTokens, pauseMs: performance.now() - start };
    }
  }
}

/**
 * Restores a paused state into `target` (default: the sequence it was paused
 * from; for keep it must be that one). A target that still holds tokens is cleared first. A swap file is
 * deleted once loaded.
 */
export async function resumeSequence(paused: PausedSequence, target?: LlamaContextSequence): Promise<ResumeResult> {
  const start = performance.now();
  switch (paused.decision) {
    case "keep": {
      if (target !== undefined && target !== paused.sequence) {
        throw new Error("a kept sequence resumes in place: its cells never left it");
      }
      return { decision: "keep", resumeMs: 0, evaluatedTokens: 0, contextTokens: paused.sequence.nextTokenIndex };
    }
    case "swap": {
      const into = target ?? paused.origin;
      if (into.disposed) throw new Error("the resume target sequence is disposed: pass a live one");
      if (into.nextTokenIndex > 0) await into.clearHistory();
      try {
        await into.loadStateFromFile(paused.file, { acceptRisk: true });
      } finally {
        await unlink(paused.file).catch(() => undefined);
      }
      return { decision: "swap", resumeMs: performance.now() - start, evaluatedTokens: 0, contextTokens: into.nextTokenIndex };
    }
    case "recompute": {
      const into = target ?? paused.origin;
      if (into.disposed) throw new Error("the resume target sequence is disposed: pass a live one");
      if (into.nextTokenIndex > 0) await into.clearHistory();
      if (paused.tokens.length > 0) await into.evaluateWithoutGeneratingNewTokens(paused.tokens.slice());
      return {
        decision: "recompute",
        resumeMs: performance.now() - start,
        evaluatedTokens: paused.tokens.length,
        contextTokens: into.nextTokenIndex,
      };
    }
  }
}

/** Frees what a paused state holds outside the sequence (the swap file); for cancelled sessions. */
export async function discardPaused(paused: PausedSequence): Promise<void> {
  if (paused.decision === "swap") await unlink(paused.file).catch(() => undefined);
}
