/**
 * @module The prefix store: a few sequences beyond the session slots that keep
 * apps' shared prefixes (the system prompt and tool block) after their
 * sessions end. The idle-slot prefix cache lives in the session slots, so
 * under saturation every freed slot is taken at once and an app with no
 * session running loses its prefix; an entry here is never admitted as a
 * session, only forked from, and is replaced least-recently-used (a fork from
 * it counts as a use). The store decides as plain data; the engine copies the
 * cells (llama.cpp sequence copy, about a millisecond) and reports back.
 *
 * Each entry has a role, which the router names per session (its
 * `x-interlace-prefix-role` header): `home` when this engine is the app's
 * home in the pool, `replica` when the app's home is another engine (a
 * session that spilled here, a hot-prefix warm). A replica takes an empty
 * entry or replaces another replica, never a home entry: with more apps
 * than one engine's store holds but few enough for the pool's stores
 * together, each engine keeps its own apps, and a spill no longer evicts
 * the only copy in the pool of another app's prefix (under plain LRU every
 * engine's store churned through every app, and an app whose entry went on
 * both engines was prefilled cold again). A home offer replaces a replica
 * first, then the least recently used home.
 */
import type { Token } from "node-llama-cpp";
import type { PrefixRole } from "../../../common/src/protocol/index.js";
import { commonPrefix } from "./slot-allocator.js";

/** One stored prefix: the sequence that holds it, its tokens and the prefix hashes they cover (engine heartbeats). */
export interface StoredPrefix {
  readonly sequence: number;
  readonly tokens: readonly Token[];
  readonly hashes: readonly string[];
  readonly role: PrefixRole;
}

/** A prefix offered for storing: its tokens (held by a session's sequence now), its hashes and its role here (absent: home). */
export interface OfferedPrefix {
  tokens: readonly Token[];
  hashes: readonly string[];
  role?: PrefixRole;
}

interface Entry {
  tokens: readonly Token[];
  hashes: readonly string[];
  role: PrefixRole;
  lastUsed: number;
}

/** Prefixes shorter than this are not worth a store sequence. */
export const PREFIX_STORE_MIN_TOKENS = 16;

export class PrefixStore {
  private readonly entries: (Entry | undefined)[];
  private clock = 0;
  /** Entries (indexes) being filled now (a prefix warm): never offered, held by nothing yet. */
  private readonly filling = new Set<number>();
  private readonly counters = { inserts: 0, evictions: 0, hits: 0 };

  /**
   * `first` is the sequence id of the first store sequence (they follow the
   * session slots, so they never split a batch); `size` of them. Prefixes
   * shorter than `minTokens` are not worth a sequence.
   */
  constructor(
    private readonly first: number,
    readonly size: number,
    private readonly minTokens = PREFIX_STORE_MIN_TOKENS,
  ) {
    this.entries = Array.from({ length: size }, () => undefined);
  }

  /**
   * Where to copy an offered prefix, or null when it is already held (the
   * holder counts as used; a home offer makes it a home entry), too short,
   * the store is off, or it is a replica and every entry holds a home
   * prefix. The chosen sequence is emptied first: an empty one, else the
   * least recently used replica, else (for a home offer) the least recently
   * used home.
   */
  offer(prefix: OfferedPrefix): number | null {
    if (this.size === 0 || prefix.tokens.length < this.minTokens) return null;
    const role = prefix.role ?? "home";
    const holder = this.entries.findIndex((e) => e !== undefined && commonPrefix(e.tokens, prefix.tokens) >= prefix.tokens.length);
    if (holder >= 0) {
      const e = this.entries[holder]!;
      e.lastUsed = ++this.clock;
      if (role === "home") e.role = "home";
      return null;
    }
    const empty = this.entries.findIndex((e, i) => e === undefined && !this.filling.has(i));
    if (empty >= 0) return this.first + empty;
    const lru = this.leastRecentlyUsed("replica") ?? (role === "home" ? this.leastRecentlyUsed("home") : undefined);
    return lru === undefined ? null : this.first + lru;
  }

  private leastRecentlyUsed(role: PrefixRole): number | undefined {
    let lru: number | undefined;
    this.entries.forEach((e, i) => {
      if (e !== undefined && e.role === role && !this.filling.has(i) && (lru === undefined || e.lastUsed < this.entries[lru]!.lastUsed)) lru = i;
    });
    return lru;
  }

  /** Whether an entry holds all of `tokens` (it counts as used). */
  holds(tokens: readonly Token[]): boolean {
    const holder = this.entries.find((e) => e !== undefined && commonPrefix(e.tokens, tokens) >= tokens.length);
    if (holder !== undefined) holder.lastUsed = ++this.clock;
    return holder !== undefined;
  }

  /**
   * `sequence` (from {@link offer}) is about to be filled in place (a
   * prefix warm): what it held is gone, and no offer picks it until
   * {@link stored} or {@link emptied}.
   */
  fill(sequence: number): void {
    const i = this.index(sequence);
    if (this.entries[i] !== undefined) this.counters.evictions++;
    this.entries[i] = undefined;
    this.filling.add(i);
  }

  /** The copy into `sequence` is done: it holds `prefix` now (replacing what it held). */
  stored(sequence: number, prefix: OfferedPrefix): void {
    const i = this.index(sequence);
    this.filling.delete(i);
    if (this.entries[i] !== undefined) this.counters.evictions++;
    this.entries[i] = { tokens: prefix.tokens.slice(), hashes: prefix.hashes.slice(), role: prefix.role ?? "home", lastUsed: ++this.clock };
    this.counters.inserts++;
  }

  /** The copy into `sequence` failed: it holds nothing now. */
  emptied(sequence: number): void {
    const i = this.index(sequence);
    this.filling.delete(i);
    if (this.entries[i] !== undefined) this.counters.evictions++;
    this.entries[i] = undefined;
  }

  /** A session forked its prefix from `sequence` (no-op for a session slot). */
  used(sequence: number): void {
    const e = this.entries[sequence - this.first];
    if (sequence < this.first || e === undefined) return;
    e.lastUsed = ++this.clock;
    this.counters.hits++;
  }

  /** What the store holds now, in sequence order. */
  held(): StoredPrefix[] {
    const out: StoredPrefix[] = [];
    this.entries.forEach((e, i) => {
      if (e !== undefined) out.push({ sequence: this.first + i, tokens: e.tokens, hashes: e.hashes, role: e.role });
    });
    return out;
  }

  /** Entries held (and of them, home entries), inserts, evictions (an entry replaced or lost) and hits (forks served) so far. */
  get stats(): { entries: number; homes: number; inserts: number; evictions: number; hits: number } {
    const held = this.entries.filter((e) => e !== undefined);
    return { entries: held.length, homes: held.filter((e) => e.role === "home").length, ...this.counters };
  }

  private index(sequence: number): number {
    const i = sequence - this.first;
    if (i < 0 || i >= this.size) throw new Error(`sequence ${sequence} is not a prefix-store sequence`);
    return i;
  }
}
