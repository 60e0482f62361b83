/**
 * @module Sampling constraints of the decode loop: the token biases (the
 * `[INTR]` ban in every step; inside a call block also bans on `[CALL]` and
 * `[TRAP]`) and the call grammar per tool set (cached), active only between
 * `[CALL]` and `[END]`, advanced over drafted tokens that enter without
 * being sampled; and the answer grammar (`response_format`), with a ban on
 * every marker while an answer is being written.
 */
import { LlamaGrammar, LlamaGrammarEvaluationState, TokenBias, type Token } from "node-llama-cpp";
import { CML, ErrorCode, InterlaceError, type AnswerFormat, type Logger, type ToolSpec } from "../../../common/src/index.js";
import { buildAnswerGrammar, buildCallGrammar, INTR_LOGIT, intrLogitBias } from "../cml/index.js";
import type { Runtime } from "./runtime.js";

/**
 * Bounds that keep a constrained call block finite even for a model that never
 * closes a string (random weights, small models).
 */
const GRAMMAR_BOUNDS = { maxStringLength: 256, maxArrayItems: 16 } as const;
const MAX_GRAMMARS = 64;

/** Which answer grammar: see `AnswerGrammarOptions`; `field` names the request's format in errors. */
export interface AnswerGrammarChoice {
  allowCall: boolean;
  awaiting?: boolean;
  field?: string;
}

export class Sampling {
  /** Applied in every decode step, grammar or not: the model can never emit `[INTR]`. */
  readonly tokenBias: TokenBias;
  /** {@link tokenBias} plus bans on `[CALL]` and `[TRAP]`, while the call grammar is active. */
  readonly callBlockBias: TokenBias;
  /**
   * {@link tokenBias} plus bans on every marker, while a JSON answer is being
   * written: its string rules would admit one by its text, and the monitor
   * would take a marker out of the answer's text (or open a block in it).
   */
  readonly answerBias: TokenBias;
  private readonly grammars = new Map<string, LlamaGrammar | null>();

  /** `extraLogitBias`: a test's logits added to the model's in every step (the `[INTR]` ban still wins). */
  constructor(
    private readonly runtime: Runtime,
    private readonly log: Logger,
    extraLogitBias?: ReadonlyMap<Token, number>,
  ) {
    const extra = extraLogitBias ?? new Map<Token, number>();
    this.tokenBias = extraLogitBias === undefined ? runtime.intrBias : combinedBias(runtime, extra);
    // Inside a constrained call block no block may open: llama.cpp grammars match a
    // control token by its text, so a string rule would otherwise admit "[CALL]".
    const opening = new Map(extra);
    for (const [id, marker] of runtime.markerTokens) {
      if (marker === CML.CALL || marker === CML.TRAP) opening.set(id as Token, (opening.get(id as Token) ?? 0) + INTR_LOGIT);
    }
    this.callBlockBias = combinedBias(runtime, opening);
    const markers = new Map(extra);
    for (const [id] of runtime.markerTokens) markers.set(id as Token, (markers.get(id as Token) ?? 0) + INTR_LOGIT);
    this.answerBias = combinedBias(runtime, markers);
  }

  /**
   * A fresh grammar state for one call block (the grammar is per tool set and
   * cached), or undefined when the tool set has no grammar.
   */
  callGrammarState(tools: ReadonlyMap<string, ToolSpec>): LlamaGrammarEvaluationState | undefined {
    if (tools.size === 0) return undefined;
    const key = JSON.stringify([...tools.values()].map((t) => [t.name, t.parameters]));
    let grammar = this.grammars.get(key);
    if (grammar === undefined) {
      try {
        const gbnf = buildCallGrammar([...tools.values()], { markerTokens: this.runtime.markerTokens, ...GRAMMAR_BOUNDS });
        grammar = new LlamaGrammar(this.runtime.llama, { grammar: gbnf });
      } catch (err) {
        this.log.warn({ err }, "call grammar unavailable for this tool set; call blocks are unconstrained");
        grammar = null;
      }
      // Tool sets come with requests: bound the cache (grammars are cheap to rebuild).
      if (this.grammars.size >= MAX_GRAMMARS) this.grammars.clear();
      this.grammars.set(key, grammar);
    }
    return grammar === null ? undefined : new LlamaGrammarEvaluationState({ model: this.runtime.model, grammar });
  }

  /**
   * A fresh answer-grammar state for one completion (the grammar is per
   * format and cached). Unlike a call grammar it is never skipped: a format
   * llama.cpp cannot take is the request's error.
   */
  answerGrammarState(format: AnswerFormat, opts: AnswerGrammarChoice): LlamaGrammarEvaluationState {
    const { allowCall, awaiting = false, field = "response_format" } = opts;
    const key = JSON.stringify(["answer", format, allowCall, awaiting]);
    let grammar = this.grammars.get(key);
    if (grammar === undefined || grammar === null) {
      try {
        grammar = new LlamaGrammar(this.runtime.llama, { grammar: buildAnswerGrammar(format, { markerTokens: this.runtime.markerTokens, allowCall, awaiting }) });
      } catch (err) {
        throw new InterlaceError(ErrorCode.BadRequest, `${field}: llama.cpp refused the grammar built from it (${err instanceof Error ? err.message : String(err)})`);
      }
      if (this.grammars.size >= MAX_GRAMMARS) this.grammars.clear();
      this.grammars.set(key, grammar);
    }
    return new LlamaGrammarEvaluationState({ model: this.runtime.model, grammar });
  }
}

/** The `[INTR]` ban plus extra logits, summed per token. */
function combinedBias(runtime: Runtime, extra: ReadonlyMap<Token, number>): TokenBias {
  const sum = new Map<Token, number>(intrLogitBias(runtime.markerTokens));
  for (const [token, logit] of extra) sum.set(token, (sum.get(token) ?? 0) + logit);
  const bias = new TokenBias(runtime.model.tokenizer);
  for (const [token, logit] of sum) bias.set(token, { logit });
  return bias;
}

/**
 * Advances a call grammar over tokens that entered the sequence without being
 * sampled (accepted draft tokens), so constrained sampling continues in step.
 * node-llama-cpp has no public API for this; the adapter uses its sampler's
 * internal binding (version pinned in package.json) and reports false when it
 * is missing, in which case the caller drops the grammar for this block.
 */
export function acceptOnGrammar(state: LlamaGrammarEvaluationState, tokens: readonly Token[]): boolean {
  const internal = state as unknown as { _llama?: { _bindings?: { AddonSampler?: { acceptGrammarEvaluationStateToken?: (s: unknown, t: Token) => void } } }; _state?: unknown };
  const accept = internal._llama?._bindings?.AddonSampler?.acceptGrammarEvaluationStateToken;
  if (accept === undefined || internal._state === undefined) return false;
  for (const t of tokens) accept(internal._state, t);
  return true;
}
