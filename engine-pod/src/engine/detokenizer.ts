/**
 * @module Incremental detokenization for streaming: one token in, the text it
 * adds out. Byte-fallback tokens that split a UTF-8 character are held until
 * the character is complete; marker control tokens map to their marker text.
 */
import type { LlamaModel, Token } from "node-llama-cpp";
import type { CmlMarker } from "../../../common/src/index.js";

const MAX_HELD = 4;
const CONTEXT = 8;

export class StreamDetokenizer {
  private held: Token[] = [];
  private recent: Token[] = [];

  constructor(
    private readonly model: LlamaModel,
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
    if (text.endsWith("\uFFFD") && this.held.length < MAX_HELD) return "";
    this.remember(this.held);
    this.held = [];
    return text;
  }

  /** Whatever is still held (at the end of a stream). */
  flush(): string {
    if (this.held.length === 0) return "";
    const text = this.model.detokenize(this.held, false, this.recent);
    this.remember(this.held);
    this.held = [];
    return text;
  }

  private remember(tokens: readonly Token[]): void {
    this.recent = [...this.recent, ...tokens].slice(-CONTEXT);
  }
}
