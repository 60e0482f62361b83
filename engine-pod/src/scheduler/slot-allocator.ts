/**
 * @module The sequence slot allocator. Each live session or completion owns
 * one sequence (slot) of the shared context. Allocation keeps busy sequences
 * contiguous (llama.cpp splits a batch at every gap between the sequence ids
 * in it: docs/engine-facts.md, "Batching"): a new request fills a gap between busy
 * slots first, evicting an idle cached state there if it must, before it
 * takes the lowest free slot; `gap()` plans compaction moves. Finished sequences may
 * stay resident as an idle prefix cache (vLLM-style automatic prefix caching):
 * a new request takes the idle slot sharing its longest token prefix, and idle
 * slots are evicted least-recently-used when no free slot is left.
 */
import type { Token } from "node-llama-cpp";

export type SlotState = "free" | "busy" | "idle";

/**
 * What `acquire` decided, as plain data. A granted slot may still hold an
 * idle cached state beyond `reusePrefix`: whoever fills it aligns or clears it.
 */
export interface SlotGrant {
  slot: number;
  /** Tokens at the start of the slot's resident state that match the request (0 when none). */
  reusePrefix: number;
}

interface Slot {
  state: SlotState;
  /** Resident tokens of an idle slot. */
  tokens: readonly Token[];
  lastUsed: number;
}

export class SlotAllocator {
  private readonly slots: Slot[];
  private clock = 0;

  constructor(size: number) {
    this.slots = Array.from({ length: size }, () => ({ state: "free" as SlotState, tokens: [], lastUsed: 0 }));
  }

  get size(): number {
    return this.slots.length;
  }

  get busy(): number {
    return this.slots.filter((s) => s.state === "busy").length;
  }

  /** Slots a request could get now (free, or idle and evictable). */
  get available(): number {
    return this.slots.filter((s) => s.state !== "busy").length;
  }

  /**
   * Grants a slot for a request whose prompt is `tokens` (empty: no reuse
   * wanted), or null when every slot is busy.
   */
  acquire(tokens: readonly Token[] = [], minReuse = 1): SlotGrant | null {
    let best: { slot: number; reuse: number } | undefined;
    if (tokens.length > 0) {
      this.slots.forEach((s, i) => {
        if (s.state !== "idle") return;
        const reuse = commonPrefix(s.tokens, tokens);
        if (reuse >= minReuse && (best === undefined || reuse > best.reuse)) best = { slot: i, reuse };
      });
    }
    if (best !== undefined) return this.take(best.slot, best.reuse);
    const gap = this.gap();
    if (gap !== null) return this.take(gap.to, 0);
    const free = this.slots.findIndex((s) => s.state === "free");
    if (free >= 0) return this.take(free, 0);
    let lru = -1;
    this.slots.forEach((s, i) => {
      if (s.state === "idle" && (lru < 0 || s.lastUsed < this.slots[lru]!.lastUsed)) lru = i;
    });
    if (lru >= 0) return this.take(lru, 0);
    return null;
  }

  /**
   * A compaction move, as plain data: the highest busy slot and the lowest
   * non-busy slot between the lowest and the highest busy ones (a gap that
   * splits every batch), or null when the busy slots are contiguous.
   */
  gap(): { from: number; to: number } | null {
    let lo = -1;
    let from = -1;
    this.slots.forEach((s, i) => {
      if (s.state !== "busy") return;
      if (lo < 0) lo = i;
      from = i;
    });
    const to = this.slots.findIndex((s, i) => i > lo && i < from && s.state !== "busy");
    return lo < 0 || to < 0 ? null : { from, to };
  }

  /** Claims a specific non-busy slot (a compaction target). */
  claim(slot: number): void {
    const s = this.slots[slot];
    if (s === undefined || s.state === "busy") throw new Error(`slot ${slot} is not available`);
    this.take(slot, 0);
  }

  /**
   * Returns a slot. With `resident` tokens it stays as an idle prefix-cache
   * entry; without, it is free (the caller has cleared its cells).
   */
  release(slot: number, resident?: readonly Token[]): void {
    const s = this.slots[slot];
    if (s === undefined) return;
    s.state = resident !== undefined && resident.length > 0 ? "idle" : "free";
    s.tokens = s.state === "idle" ? resident!.slice() : [];
    s.lastUsed = ++this.clock;
  }

  private take(slot: number, reusePrefix: number): SlotGrant {
    const s = this.slots[slot]!;
    s.state = "busy";
    s.tokens = [];
    s.lastUsed = ++this.clock;
    return { slot, reusePrefix };
  }
}

/** Length of the common prefix of two token lists. */
export function commonPrefix(a: readonly Token[], b: readonly Token[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
