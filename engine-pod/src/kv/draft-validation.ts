/**
 * @module O2 (paper §3.2): validate a drafted call block in ONE forward pass.
 * When a call block opens and the tool cache holds a call for the session,
 * its tokens are proposed as a draft: `controlledEvaluate` evaluates the
 * pending token and every draft token in one batch and reports the model's
 * next token after each; the draft is accepted up to the first position where
 * the model disagrees. (node-llama-cpp's token-predictor path accepted at most
 * one draft token per pass, so it is not used.)
 *
 * Rollback keeps the result identical to decoding without a draft: the
 * rejected tail is erased with `eraseContextTokenRanges`, and so is the last
 * accepted token, which is handed back as the token to feed next. The
 * caller's normal sampler (its temperature, bias and call grammar) then draws
 * the token after the accepted prefix — under greedy sampling the very token
 * the validation pass saw, so the output equals the undrafted one. Under a
 * scripted policy the main model's tokens are the script's: the draft is
 * compared with them instead (`expected`), still through the real pass.
 * It lives under the KV manager because the rollback erases cells.
 */
import type { LlamaContextSequence, Token, TokenBias } from "node-llama-cpp";

export interface DraftValidation {
  /** Draft tokens the main model agreed with, in order. */
  accepted: Token[];
  /** Tokens of the draft proposed (after the `maxDraftTokens` bound). */
  proposed: number;
  /**
   * The token to feed next (not yet in the KV cache): the last accepted draft
   * token, or the pending token when none was accepted.
   */
  feed: Token;
  /** Wall time of the validation pass and the rollback, ms. */
  ms: number;
}

export interface ValidateDraftOptions {
  /** The last emitted token, not yet in the KV cache (the generator's pending token). */
  pending: Token;
  draft: readonly Token[];
  /** Most draft tokens proposed in this pass. */
  maxDraftTokens: number;
  /** Scripted main policy: the tokens it will emit next (compared instead of the model's choice). */
  expected?: readonly Token[];
  temperature?: number;
  seed?: number;
  tokenBias?: TokenBias;
}

/**
 * Runs one validation pass on `seq` (no generator may be live on it). On
 * return the sequence holds its previous tokens plus the accepted prefix
 * minus its last token, which is `feed`.
 */
export async function validateDraft(seq: LlamaContextSequence, opts: ValidateDraftOptions): Promise<DraftValidation> {
  const t0 = performance.now();
  const draft = opts.draft.slice(0, Math.max(0, opts.maxDraftTokens));
  if (draft.length === 0) return { accepted: [], proposed: 0, feed: opts.pending, ms: 0 };
  const base = seq.nextTokenIndex;
  const sampling = {
    temperature: opts.temperature ?? 0,
    ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    topK: 0,
    topP: 1,
    ...(opts.tokenBias !== undefined ? { tokenBias: opts.tokenBias } : {}),
  };
  // Only the predictions after the pending token and after each draft token but the last matter.
  const input = [opts.pending, ...draft].map((token, i) =>
    i < draft.length ? ([token, { generateNext: { token: opts.expected === undefined, options: sampling } }] as const) : token,
  );
  const out = await seq.controlledEvaluate(input as Parameters<LlamaContextSequence["controlledEvaluate"]>[0]);
  let k = 0;
  while (k < draft.length) {
    const want = opts.expected !== undefined ? opts.expected[k] : out[k]?.next.token;
    if (want === undefined || want === null || want !== draft[k]) break;
    k++;
  }
  const accepted = draft.slice(0, k);
  // Keep [previous..., pending, accepted[0..k-2]]; the last accepted token (or the pending one) is fed next.
  const keep = base + k;
  if (seq.nextTokenIndex > keep) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
  return { accepted, proposed: draft.length, feed: k > 0 ? accepted[k - 1]! : opts.pending, ms: performance.now() - t0 };
}
