/**
 * @module Prefix sharing on node-llama-cpp sequences: reuse what a sequence
 * already holds (longest common prefix, erase the rest) and fork a resident
 * prefix from one sequence into another (the internal
 * `_copyStateFromOtherSequence`, pinned to the version it was tested on, with
 * a re-evaluation fallback).
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";

/** The node-llama-cpp version whose internal sequence copy `forkPrefix` was verified on (test/kv). */
export const FORK_TESTED_VERSION = "3.22.1";

export interface PrefixReuse {
  /** Tokens of `tokens` already resident and kept. */
  reusedTokens: number;
  /** Resident tokens erased because they did not match. */
  erasedTokens: number;
  /** What remains to evaluate: `tokens.slice(reusedTokens)`. */
  suffix: Token[];
}

/**
 * Aligns `sequence` with `tokens`: keeps the longest common prefix, erases the
 * sequence's tail after it (`eraseContextTokenRanges`), and returns the suffix
 * still to evaluate. With `keepLastForLogits` (default), at least one token is
 * left to evaluate so the caller gets logits to sample from.
 */
export async function reusePrefix(
  sequence: LlamaContextSequence,
  tokens: readonly Token[],
  options: { keepLastForLogits?: boolean } = {},
): Promise<PrefixReuse> {
  const before = sequence.nextTokenIndex;
  let common = Math.min(sequence.compareContextTokens(tokens.slice()).firstDifferentIndex, tokens.length);
  if ((options.keepLastForLogits ?? true) && common === tokens.length && common > 0) common -= 1;
  if (common < before) await sequence.eraseContextTokenRanges([{ start: common, end: before }]);
  // An erase llama.cpp cannot do in place (e.g. from the first cell) drops the
  // whole sequence instead; trust what is resident now, not the plan.
  const reused = Math.min(sequence.nextTokenIndex, common);
  return { reusedTokens: reused, erasedTokens: before - reused, suffix: tokens.slice(reused) };
}

export interface ForkResult {
  /** `copy`: the KV cells were copied; `evaluate`: the prefix was re-evaluated (fallback); `failed`: no copy and no fallback (the target is empty). */
  method: "copy" | "evaluate" | "failed";
  /** Tokens the target now holds (the prefix). */
  tokens: number;
  /** Tokens evaluated to build it (0 for a copy). */
  evaluatedTokens: number;
  ms: number;
}

interface InternalCopy {
  _copyStateFromOtherSequence?: (other: LlamaContextSequence, upToTokenIndex: number) => Promise<boolean>;
}

/**
 * Makes `target` hold the first `upTo` tokens of `source` (default: all),
 * sharing a system-prompt prefix without evaluating it again. Uses the internal
 * sequence copy; when it is missing or fails, clears the target and evaluates
 * the prefix (unless `fallback` is false: then the target is left empty).
 * Neither sequence may have an active `evaluate()` generator, and the target
 * must not use a token predictor.
 */
export async function forkPrefix(
  target: LlamaContextSequence,
  source: LlamaContextSequence,
  upTo: number = source.nextTokenIndex,
  options: { fallback?: boolean } = {},
): Promise<ForkResult> {
  const start = performance.now();
  const count = Math.max(0, Math.min(upTo, source.nextTokenIndex));
  const prefix = source.contextTokens.slice(0, count);
  if (target.nextTokenIndex > 0) await target.clearHistory();
  if (count === 0) return { method: "copy", tokens: 0, evaluatedTokens: 0, ms: performance.now() - start };
  const copy = (target as unknown as InternalCopy)._copyStateFromOtherSequence;
  if (typeof copy === "function") {
    const ok = await copy.call(target, source, count).catch(() => false);
    if (ok && sameTokens(target.contextTokens, prefix)) {
      return { method: "copy", tokens: count, evaluatedTokens: 0, ms: performance.now() - start };
    }
    // A failed copy may leave the target's token list out of step with its cells.
    await target.clearHistory();
  }
  if (options.fallback === false) return { method: "failed", tokens: 0, evaluatedTokens: 0, ms: performance.now() - start };
  await target.evaluateWithoutGeneratingNewTokens(prefix);
  return { method: "evaluate", tokens: target.nextTokenIndex, evaluatedTokens: count, ms: performance.now() - start };
}

function sameTokens(a: readonly Token[], b: readonly Token[]): boolean {
  return a.length === b.length && a.every((token, i) => token === b[i]);
}
