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
   * owned by a live session (`live`: `running`, e.g. swapped out for a trap,
   * counts as held; `prefilling` as filling), and apart the ones only a
   * prefill is putting into cells; records none of these hold any more are
   * forgotten. A prompt missing only its last token counts (reuse keeps one
   * back for logits).
   */
  hashes(sequences: readonly (readonly Token[])[], live: (id: string) => "running" | "prefilling" | undefined): { held: Set<string>; filling: Set<string> } {
    const held = new Set<string>();
    const filling = new Set<string>();
    for (let i = this.records.length - 1; i >= 0; i--) {
      const r = this.records[i]!;
      const state = live(r.id);
      if (state === "running" || sequences.some((tokens) => commonPrefix(tokens, r.prompt) >= r.prompt.length - 1)) for (const h of r.chain) held.add(h);
      else if (state === "prefilling") for (const h of r.chain) filling.add(h);
      else this.records.splice(i, 1);
    }
    for (const h of held) filling.delete(h);
    return { held, filling };
  }
}
