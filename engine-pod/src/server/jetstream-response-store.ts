/**
 * @module The {@link ResponseStore} every engine shares when NATS is
 * configured: the `interlace-responses` JetStream KV bucket (file storage,
 * `INTERLACE_NATS_REPLICAS` replicas), one key per engine response id,
 * each value expiring `--response-store-ttl-ms` after it was written. A
 * response outlives the engine that generated it: any engine answers
 * `GET`, `input_items` and `DELETE` for it, and continues it by prefilling
 * its stored conversation.
 */
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { openResponsesBucket } from "../../../common/src/protocol/index.js";
import type { ResponseRetention, ResponseStore, StoredResponse } from "./response-store.js";

export class JetStreamResponseStore implements ResponseStore {
  private constructor(
    private readonly kv: KV,
    readonly retention: ResponseRetention,
  ) {}

  /** Opens (or creates) the bucket with this retention. */
  static async open(nc: NatsConnection, ttlMs: number): Promise<JetStreamResponseStore> {
    return new JetStreamResponseStore(await openResponsesBucket(nc, ttlMs), { ttlMs });
  }

  async put(value: StoredResponse): Promise<void> {
    await this.kv.put(value.id, JSON.stringify(value));
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    // Ids come from clients: one that is no valid key cannot have been stored.
    if (!isKey(id)) return undefined;
    const entry = await this.kv.get(id);
    // A delete leaves a marker entry until it expires too.
    return entry === null || entry.operation !== "PUT" ? undefined : entry.json<StoredResponse>();
  }

  async delete(id: string): Promise<boolean> {
    if ((await this.get(id)) === undefined) return false;
    await this.kv.purge(id);
    return true;
  }
}

/** KV keys the engine's response ids fit (`resp_` and hex). */
function isKey(id: string): boolean {
  return /^[A-Za-z0-9_-]{1,200}$/.test(id);
}
