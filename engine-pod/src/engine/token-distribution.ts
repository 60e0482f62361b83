/**
 * @module The next-token distribution of one decode step, as OpenAI's
 * `logprobs` report it, and the generator that yields each sampled token
 * with its distribution (node-llama-cpp's `evaluateWithMetadata` with
 * `probabilities`, paid only by completions that ask for log-probabilities).
 *
 * Which distribution: node-llama-cpp returns the softmax of the logits after
 * the sampler chain, that is after the grammar (call blocks, answer format),
 * the engine's token bias, the repetition penalties, `top_p`'s cut and the
 * temperature's division. The temperature is divided back out here
 * (p ∝ p_T^T), so a token's logprob does not depend on the temperature it
 * was sampled at, as OpenAI's do: at temperature 0 (greedy, the default) and
 * 1 the values are node-llama-cpp's own; at other temperatures they are exact
 * up to float32 underflow of the far tail. The constraints stay: a token the
 * grammar forbids has probability 0, and a token outside `top_p`'s nucleus
 * is not in the distribution at all.
 */
import type { Token } from "node-llama-cpp";

/** What a probability of 0 reports (JSON has no -Infinity; OpenAI writes -9999 too). */
export const ZERO_PROBABILITY_LOGPROB = -9999;

export class TokenDistribution {
  /**
   * log Σ p_i^T over the distribution (undoing the temperature), computed at
   * the first lookup: every sampled token gets a distribution, but only
   * content tokens are looked up.
   */
  private normalizer: number | undefined;

  /**
   * @param probabilities every candidate's probability, most likely first (node-llama-cpp's order)
   * @param temperature the temperature the probabilities were computed at (0: greedy, the logits unscaled)
   */
  constructor(
    private readonly probabilities: ReadonlyMap<Token, number>,
    private readonly temperature: number,
  ) {}

  private get logNormalizer(): number {
    this.normalizer ??= logSumExp([...this.probabilities.values()].filter((p) => p > 0).map((p) => this.temperature * Math.log(p)));
    return this.normalizer;
  }

  private get scaled(): boolean {
    return this.temperature > 0 && this.temperature !== 1;
  }

  /** The token's log-probability (ZERO_PROBABILITY_LOGPROB where it has none). */
  logprob(token: Token): number {
    const p = this.probabilities.get(token) ?? 0;
    if (!(p > 0)) return ZERO_PROBABILITY_LOGPROB;
    const lp = this.scaled ? this.temperature * Math.log(p) - this.logNormalizer : Math.log(p);
    // Rounding can put the most likely token a hair above 0.
    return Math.max(ZERO_PROBABILITY_LOGPROB, Math.min(0, lp));
  }

  /** The `n` most likely tokens, most likely first (fewer when the distribution has fewer). */
  top(n: number): { token: Token; logprob: number }[] {
    const out: { token: Token; logprob: number }[] = [];
    if (n <= 0) return out;
    for (const token of this.probabilities.keys()) {
      out.push({ token, logprob: this.logprob(token) });
      if (out.length >= n) break;
    }
    return out;
  }
}

/** log Σ exp(v), without overflow (and without spreading a vocabulary-sized array into Math.max). */
function logSumExp(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const max = values.reduce((m, v) => (v > m ? v : m), -Infinity);
  let sum = 0;
  for (const v of values) sum += Math.exp(v - max);
  return max + Math.log(sum);
}

/**
 * `evaluateWithMetadata`'s generator seen as `evaluate`'s: it yields the
 * tokens and hands each one's distribution to `onDistribution` just before,
 * so the decode loop stays the same with and without log-probabilities.
 */
export async function* withDistributions(
  inner: AsyncGenerator<{ token: Token; probabilities: Map<Token, number> }, void, Token | Token[] | void>,
  onDistribution: (probabilities: Map<Token, number>) => void,
): AsyncGenerator<Token, void, Token | Token[] | void> {
  try {
    let input: Token | Token[] | void = undefined;
    for (;;) {
      const r = await inner.next(input);
      if (r.done === true) return;
      onDistribution(r.value.probabilities);
      input = yield r.value.token;
    }
  } finally {
    await inner.return();
  }
}
