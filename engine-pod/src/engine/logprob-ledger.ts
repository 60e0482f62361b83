/**
 * @module Which generated token each character of a completion's content
 * came from, for OpenAI's `logprobs.content`: one entry per token generated
 * outside call blocks, whose `token` is the text it put in the content, so
 * the entries' texts (and bytes) concatenate to the content exactly.
 *
 * Text passes three hold-backs on its way into the content: the
 * detokenizer (an incomplete UTF-8 character), the CML monitor (a possible
 * text marker) and the stop sequences. A token claims the characters the
 * monitor passed on for it (what it released, held text included); the stop
 * sequences then pass a prefix of that stream, which fills the claims in
 * order. So a token that completes no character has `token: ""` and the one
 * that completes it carries the character; a token a stop sequence cuts
 * keeps the part before it, and the tokens after it are dropped. Tokens in
 * call blocks claim nothing and get no entry (OpenAI reports content tokens
 * only; tool calls carry no log-probabilities).
 */
import type { Token } from "node-llama-cpp";
import type { TokenLogprob } from "./engine-api.js";
import type { TokenDistribution } from "./token-distribution.js";

interface Pending {
  logprob: number;
  topLogprobs: TokenLogprob["topLogprobs"];
  /** Characters of the content that are this token's. */
  claim: number;
  /** Of them, those the content has received so far. */
  text: string;
}

const utf8 = (text: string): number[] => [...Buffer.from(text, "utf8")];

export class LogprobLedger {
  private readonly settled: TokenLogprob[] = [];
  private pending: Pending[] = [];
  private drained = 0;
  private closed = false;

  /**
   * @param top alternatives reported per token (OpenAI `top_logprobs`, 0..20)
   * @param tokenText an alternative token's text
   */
  constructor(
    private readonly top: number,
    private readonly tokenText: (token: Token) => string,
  ) {}

  /** A token generated outside call blocks; `claim`: the characters the monitor passed on for it. */
  add(token: Token, distribution: TokenDistribution, claim: number): void {
    if (this.closed) return;
    const topLogprobs = distribution.top(this.top).map((alt) => {
      const text = this.tokenText(alt.token);
      return { token: text, logprob: alt.logprob, bytes: utf8(text) };
    });
    this.pending.push({ logprob: distribution.logprob(token), topLogprobs, claim, text: "" });
    this.settle();
  }

  /**
   * Text the content receives (after the stop sequences), in order; with
   * `stopped`, a stop sequence ended the content there.
   */
  consume(text: string, stopped: boolean): void {
    if (this.closed) return;
    let rest = text;
    while (rest !== "") {
      const open = this.pending.find((p) => p.text.length < p.claim);
      if (open === undefined) {
        // Text no token claimed (what the end flushes): the last token's.
        this.appendToLast(rest);
        break;
      }
      const n = open.claim - open.text.length;
      open.text += rest.slice(0, n);
      rest = rest.slice(n);
    }
    if (stopped) this.end();
    else this.settle();
  }

  /** Entries settled since the last call (a stream's chunk carries them with its text). */
  drain(): TokenLogprob[] {
    const out = this.settled.slice(this.drained);
    this.drained = this.settled.length;
    return out;
  }

  /**
   * The content is complete: claims it never filled (text after a stop
   * sequence, or cut off with the turn) are dropped, and so are trailing
   * tokens that put nothing in it.
   */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    let last = -1;
    this.pending.forEach((p, i) => {
      if (p.text !== "") last = i;
    });
    for (const p of this.pending.slice(0, last + 1)) this.settled.push(entry(p));
    this.pending = [];
  }

  /** Every settled entry, in order (after `end`: the completion's `logprobs.content`). */
  get entries(): readonly TokenLogprob[] {
    return this.settled;
  }

  /** Moves filled claims out in order; a token that claimed nothing waits until a later one exists (the end's flush may still be its). */
  private settle(): void {
    while (this.pending.length > 0) {
      const head = this.pending[0]!;
      if (head.text.length < head.claim || (head.claim === 0 && this.pending.length === 1)) return;
      this.settled.push(entry(head));
      this.pending.shift();
    }
  }

  private appendToLast(text: string): void {
    const last = this.pending.at(-1);
    if (last !== undefined) {
      last.text += text;
      last.claim = last.text.length;
      return;
    }
    // Already settled (and maybe streamed): the completion's entries still add up to its content.
    const done = this.settled.at(-1);
    if (done !== undefined) {
      done.token += text;
      done.bytes = utf8(done.token);
    }
  }
}

function entry(p: Pending): TokenLogprob {
  return { token: p.text, logprob: p.logprob, bytes: utf8(p.text), topLogprobs: p.topLogprobs };
}
