/**
 * @module Stored Responses API turns, for `previous_response_id` and
 * `GET /v1/responses/{id}`: each response's whole conversation (so a
 * follow-up can be rendered again when its KV is no longer retained), the
 * instructions and tools it ran with (a follow-up with other ones cannot
 * continue the resident sequence), and the response object. Bounded by a
 * TTL and an entry cap (oldest first); an expired, evicted or deleted id is
 * unknown.
 */
import type { ConversationMessage } from "./responses.js";

export interface StoredResponse {
  id: string;
  /** The conversation through this response's output (system message first, when instructions were given). */
  conversation: ConversationMessage[];
  instructions?: string;
  /** Canonical JSON of the tools it ran with. */
  toolsKey: string;
  response: Record<string, unknown>;
  /** The request's own input items, each with an id (`GET /v1/responses/{id}/input_items`). */
  inputItems: Record<string, unknown>[];
}

export interface ResponseStoreLimits {
  /** How long a response stays retrievable and continuable, ms. */
  ttlMs: number;
  maxEntries: number;
}

export const DEFAULT_RESPONSE_STORE: ResponseStoreLimits = { ttlMs: 30 * 60_000, maxEntries: 1024 };

export class ResponseStore {
  /** Insertion order is age order: the first entry is the oldest. */
  private readonly entries = new Map<string, { value: StoredResponse; expiresAt: number }>();

  constructor(
    readonly limits: ResponseStoreLimits = DEFAULT_RESPONSE_STORE,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  put(value: StoredResponse): void {
    this.entries.delete(value.id);
    this.entries.set(value.id, { value, expiresAt: this.now() + this.limits.ttlMs });
    for (const id of this.entries.keys()) {
      if (this.entries.size <= this.limits.maxEntries) break;
      this.entries.delete(id);
    }
  }

  /** Forgets a response (`DELETE /v1/responses/{id}`); false when it was unknown or expired. */
  delete(id: string): boolean {
    return this.get(id) !== undefined && this.entries.delete(id);
  }

  /** The stored response, or undefined when unknown, expired or evicted. */
  get(id: string): StoredResponse | undefined {
    const e = this.entries.get(id);
    if (e === undefined) return undefined;
    if (e.expiresAt <= this.now()) {
      this.entries.delete(id);
      return undefined;
    }
    return e.value;
  }
}
