/**
 * @module Incremental detokenization for streaming: one token in, the text it
 * adds out. Tokens that end inside a UTF-8 character (SPM byte-fallback
 * tokens, byte-level BPE pieces) are held until the character is complete, so
 * no multi-byte character is ever streamed as U+FFFD halves; marker control
 * tokens map to their marker text.
 */
import type { LlamaModel, Token } from "node-llama-cpp";
import type { CmlMarker } from "../../../common/src/index.js";

/**
 * Tokens held at most while the text still ends inside a character. A
 * character is at most 4 bytes, but in a byte-level BPE vocabulary one token
 * may end one character and start the next, so a run of such tokens can leave
 * every prefix incomplete; what is complete streams out meanwhile, and past
 * this many tokens the tail is released as it is.
 */
const MAX_HELD = 64;
/** Tokens of context for SPM leading-space handling; always whole characters (held tokens join it only once complete). */
const CONTEXT = 8;

/** Length of `text` without the U+FFFD run at its end (an incomplete character's bytes decode to it). */
function completeLength(text: string): number {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0xfffd) end--;
  return end;
}

export class StreamDetokenizer {
  private held: Token[] = [];
  /** Characters of the held tokens' text already streamed (their complete prefix). */
  private streamed = 0;
  private recent: Token[] = [];

  constructor(
    private readonly model: Pick<LlamaModel, "detokenize">,
    private readonly markers: ReadonlyMap<number, CmlMarker>,
  ) {}

  /** Text added by `token` (possibly empty while a character is incomplete). */
  push(token: Token): string {
    const marker = this.markers.get(token);
    if (marker !== undefined) {
      const before = this.flush();
      this.remember([token]);
      return before + marker;
    }
    this.held.push(token);
    const text = this.model.detokenize(this.held, false, this.recent);
    if (text.endsWith("\uFFFD") && this.held.length < MAX_HELD) {
      // Stream the complete characters; hold the bytes of the one still open.
      const complete = completeLength(text);
      const out = complete > this.streamed ? text.slice(this.streamed, complete) : "";
      this.streamed = Math.max(this.streamed, complete);
      return out;
    }
    return this.release(text);
  }

  /** Whatever is still held (at the end of a stream, or before a marker). */
  flush(): string {
    if (this.held.length === 0) return "";
    return this.release(this.model.detokenize(this.held, false, this.recent));
  }

  private release(text: string): string {
    const out = text.slice(this.streamed);
    this.remember(this.held);
    this.held = [];
    this.streamed = 0;
    return out;
  }

  private remember(tokens: readonly Token[]): void {
    this.recent = [...this.recent, ...tokens].slice(-CONTEXT);
  }
}
