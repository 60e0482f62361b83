/**
 * @module Which prompt prefixes the engine holds resident, as prefix-hash
 * chains (common/prefix-hash): each admitted prompt is recorded with its
 * chain, and a record counts as resident while some sequence's cells still
 * start with its whole prompt (a live session filling or decoding it, or an
 * idle slot kept as prefix cache). Checked against the sequences' actual
 * tokens, so compaction, eviction and clearing are seen without hooks.
 */
import type { Token } from "node-llama-cpp";
import { commonPrefix } from "../scheduler/index.js";

interface PromptRecord {
  id: string;
  prompt: readonly Token[];
  chain: readonly string[];
}

export class ResidentPrefixes {
  /** Newest last; bounded, oldest dropped first. */
  private readonly records: PromptRecord[] = [];

  constructor(private readonly maxRecords: number) {}

  record(id: string, prompt: readonly Token[], chain: readonly string[]): void {
    if (chain.length === 0 || prompt.length === 0) return;
    this.records.push({ id, prompt, chain });
    if (this.records.length > this.maxRecords) this.records.shift();
  }

  /**
   * The hashes resident in `sequences` (each sequence's context tokens) or
   * owned by a live session (`isLive`: its prompt is being filled, or is
   * swapped out for a trap); records neither holds any more are forgotten. A
   * prompt missing only its last token counts (reuse keeps one back for logits).
   */
  hashes(sequences: readonly (readonly Token[])[], isLive: (id: string) => boolean): string[] {
    const out = new Set<string>();
    for (let i = this.records.length - 1; i >= 0; i--) {
      const r = this.records[i]!;
      const held = isLive(r.id) || sequences.some((tokens) => commonPrefix(tokens, r.prompt) >= r.prompt.length - 1);
      if (held) for (const h of r.chain) out.add(h);
      else this.records.splice(i, 1);
    }
    return [...out];
  }
}
