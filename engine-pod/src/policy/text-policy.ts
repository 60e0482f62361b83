/**
 * @module The `text` scripted policy: emit the given pieces in order (CML
 * markers included, as control tokens where the model has them), then EOS.
 */
import type { Token } from "node-llama-cpp";
import type { PolicyStep, PolicyTokenizer, TokenPolicy } from "./policy.js";

export class TextPolicy implements TokenPolicy {
  private readonly queue: Token[];

  constructor(pieces: readonly string[], tok: PolicyTokenizer) {
    this.queue = pieces.flatMap((p) => tok.tokenizeCml(p));
  }

  next(): PolicyStep {
    return this.queue.shift() ?? "eos";
  }
}
