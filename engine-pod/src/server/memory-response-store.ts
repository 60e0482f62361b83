/**
 * @module The in-memory {@link ResponseStore} of a standalone engine (no
 * NATS): this process only, bounded by a TTL and an entry cap (oldest first).
 */
import { DEFAULT_RESPONSE_RETENTION, type ResponseStore, type StoredResponse } from "./response-store.js";

export interface MemoryResponseStoreLimits {
  ttlMs: number;
  maxEntries: number;
}

export class MemoryResponseStore implements ResponseStore {
  /** Insertion order is age order: the first entry is the oldest. */
  private readonly entries = new Map<string, { value: StoredResponse; expiresAt: number }>();

  constructor(
    readonly retention: MemoryResponseStoreLimits = DEFAULT_RESPONSE_RETENTION,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  put(value: StoredResponse): Promise<void> {
    this.entries.delete(value.id);
    this.entries.set(value.id, { value, expiresAt: this.now() + this.retention.ttlMs });
    for (const id of this.entries.keys()) {
      if (this.entries.size <= this.retention.maxEntries) break;
      this.entries.delete(id);
    }
    return Promise.resolve();
  }

  delete(id: string): Promise<boolean> {
    return Promise.resolve(this.live(id) !== undefined && this.entries.delete(id));
  }

  get(id: string): Promise<StoredResponse | undefined> {
    return Promise.resolve(this.live(id));
  }

  private live(id: string): StoredResponse | undefined {
    const e = this.entries.get(id);
    if (e === undefined) return undefined;
    if (e.expiresAt <= this.now()) {
      this.entries.delete(id);
      return undefined;
    }
    return e.value;
  }
}
