/**
 * @module The scripted-policy contract. A policy decides which token is fed
 * next while every token is still a real forward pass: the decode loop samples
 * as usual, discards the sample and evaluates the policy's token instead, and
 * every call, interrupt and trap the policy writes goes through the real
 * monitor, executor and interrupt manager. A policy's state is derived from
 * the transcript (which calls were emitted, which results injected), so it
 * survives sync re-entries and async-naive restarts.
 */
import type { Token } from "node-llama-cpp";

/** What the policy may know about the transcript so far. Plain data. */
export interface PolicyView {
  /** Ids of call blocks emitted so far (their `[END]` fed). */
  readonly emittedCalls: ReadonlySet<string>;
  /** Ids of interrupts injected so far (tool results and errors). */
  readonly injected: ReadonlySet<string>;
}

/** The next token to feed, or `eos` to end the turn. */
export type PolicyStep = Token | "eos";

export interface TokenPolicy {
  /** Called once per decode step of a scripted session. */
  next(view: PolicyView): PolicyStep;
  /**
   * Whether the script still needs an interrupt that no outstanding call will
   * deliver (a user interrupt that introduces more work): a trap with nothing
   * outstanding then waits for it instead of ending the session.
   */
  expectsInterrupt?(view: PolicyView): boolean;
  /**
   * The next `n` tokens the policy will emit (fewer at a decision point it has
   * not reached), without consuming them: O2 validates a draft against them.
   */
  peek?(view: PolicyView, n: number): Token[];
}

/** Tokenizers a policy needs (from the runtime). */
export interface PolicyTokenizer {
  /** CML text with markers → tokens (markers as control tokens where the model has them). */
  tokenizeCml(text: string): Token[];
  /** Plain text → tokens. */
  tokenizeText(text: string): Token[];
}
