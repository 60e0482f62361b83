/**
 * @module The store of Responses API turns behind `previous_response_id`,
 * `GET /v1/responses/{id}`, its `input_items` and `DELETE`: each response's
 * whole conversation (so a follow-up can be rendered again on any engine,
 * when no engine retains its KV), the instructions and tools it ran with (a
 * follow-up with other ones cannot continue the resident sequence), and the
 * response object. Two implementations: {@link MemoryResponseStore} (a
 * standalone engine) and `JetStreamResponseStore` (every engine sharing one
 * bucket, when NATS is configured). An expired, evicted or deleted id is
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
  /** The API key id that created it (through the router: the client's; see http-auth.ts `actingFor`): only it may read, continue or delete it. */
  owner?: string;
}

/** How long responses are kept, and (in memory only) how many at most: for the 404's explanation. */
export interface ResponseRetention {
  /** How long a response stays retrievable and continuable after it was stored, ms. */
  ttlMs: number;
  /** Most responses kept at once (oldest dropped first); absent: bounded by the TTL alone. */
  maxEntries?: number;
}

export interface ResponseStore {
  readonly retention: ResponseRetention;
  put(value: StoredResponse): Promise<void>;
  /** The stored response, or undefined when unknown, expired, evicted or deleted. */
  get(id: string): Promise<StoredResponse | undefined>;
  /** Forgets a response (`DELETE /v1/responses/{id}`); false when it was unknown or expired. */
  delete(id: string): Promise<boolean>;
}

export const DEFAULT_RESPONSE_RETENTION = { ttlMs: 30 * 60_000, maxEntries: 1024 } as const;

/** What the 404 of an unknown `previous_response_id` says about retention. */
export function describeRetention(retention: ResponseRetention): string {
  const ttl = `responses are kept ${Math.round(retention.ttlMs / 1000)} s`;
  return retention.maxEntries === undefined ? ttl : `${ttl}, at most ${retention.maxEntries}`;
}
