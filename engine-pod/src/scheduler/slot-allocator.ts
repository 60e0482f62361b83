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
 *
 * An idle slot may also be retained under a key (the Responses API's
 * `previous_response_id`) for a bounded time: until it expires, only a
 * request naming that key takes it, compaction does not claim it, and LRU
 * eviction passes it over (it is evicted only when nothing else is left, so
 * retention never refuses a request). At most `maxRetained` slots are
 * retained at once; retaining one more drops the oldest retention.
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
  /** A retained idle slot: its key and when the retention ends (epoch ms). */
  retained?: { key: string; until: number };
}

/** How long, and how many, finished sequences are retained under a key. */
export interface Retention {
  ttlMs: number;
  /** Most slots retained at once (0: retention off). */
  maxRetained: number;
}

export class SlotAllocator {
  private readonly slots: Slot[];
  private clock = 0;

  constructor(
    size: number,
    private readonly retention: Retention = { ttlMs: 0, maxRetained: 0 },
    private readonly now: () => number = Date.now,
  ) {
    this.slots = Array.from({ length: size }, () => ({ state: "free" as SlotState, tokens: [], lastUsed: 0 }));
  }

  /** Whether `s` is an idle slot still retained (for a key other than `key`, when given). */
  private held(s: Slot, key?: string): boolean {
    return s.state === "idle" && s.retained !== undefined && s.retained.until > this.now() && s.retained.key !== key;
  }

  /** Resident tokens of the slot retained under `key`, or undefined (never retained, expired or evicted). */
  retainedTokens(key: string): readonly Token[] | undefined {
    const s = this.slots.find((x) => x.retained?.key === key && this.held(x));
    return s?.tokens;
  }

  /** Slots retained now. */
  get retainedCount(): number {
    return this.slots.filter((s) => this.held(s)).length;
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
   * wanted), or null when every slot is busy. `key` names the retained slot
   * the request continues (only it may take that slot while retained).
   */
  acquire(tokens: readonly Token[] = [], minReuse = 1, key?: string): SlotGrant | null {
    let best: { slot: number; reuse: number } | undefined;
    if (tokens.length > 0) {
      this.slots.forEach((s, i) => {
        if (s.state !== "idle" || this.held(s, key)) return;
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
      if (s.state === "idle" && !this.held(s) && (lru < 0 || s.lastUsed < this.slots[lru]!.lastUsed)) lru = i;
    });
    if (lru >= 0) return this.take(lru, 0);
    // Only retained slots are left: evict the one whose retention ends first rather than refuse.
    let soonest = -1;
    this.slots.forEach((s, i) => {
      if (s.state === "idle" && (soonest < 0 || (s.retained?.until ?? 0) < (this.slots[soonest]!.retained?.until ?? 0))) soonest = i;
    });
    if (soonest >= 0) return this.take(soonest, 0);
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
    const to = this.slots.findIndex((s, i) => i > lo && i < from && s.state !== "busy" && !this.held(s));
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
   * entry (retained under `retainAs`, when retention is on); without, it is
   * free (the caller has cleared its cells).
   */
  release(slot: number, resident?: readonly Token[], retainAs?: string): void {
    const s = this.slots[slot];
    if (s === undefined) return;
    s.state = resident !== undefined && resident.length > 0 ? "idle" : "free";
    s.tokens = s.state === "idle" ? resident!.slice() : [];
    s.lastUsed = ++this.clock;
    delete s.retained;
    if (s.state !== "idle" || retainAs === undefined || this.retention.maxRetained <= 0 || this.retention.ttlMs <= 0) return;
    s.retained = { key: retainAs, until: this.now() + this.retention.ttlMs };
    // Over the cap: the oldest retention ends (its slot stays an ordinary idle prefix).
    const held = this.slots.filter((x) => this.held(x)).sort((a, b) => a.retained!.until - b.retained!.until);
    for (const x of held.slice(0, Math.max(0, held.length - this.retention.maxRetained))) delete x.retained;
  }

  private take(slot: number, reusePrefix: number): SlotGrant {
    const s = this.slots[slot]!;
    s.state = "busy";
    s.tokens = [];
    delete s.retained;
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
