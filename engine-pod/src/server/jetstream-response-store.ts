/**
 * @module The {@link ResponseStore} every engine shares when NATS is
 * configured: the `interlace-responses` JetStream KV bucket (file storage,
 * `INTERLACE_NATS_REPLICAS` replicas), one key per engine response id under
 * the engine's namespace (`<namespace>.<id>`: an engine's NATS identity may
 * touch only its own namespace's keys, so one tenant's engines never read
 * another's conversations), each value expiring `--response-store-ttl-ms`
 * after it was written. A
 * response outlives the engine that generated it: any engine answers
 * `GET`, `input_items` and `DELETE` for it, and continues it by prefilling
 * its stored conversation. A conversation over one NATS message
 * (`max_payload`, 1 MiB by default) is stored in parts (common/protocol's
 * chunked KV values), so a long one is kept like a short one.
 */
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { encodeToken, getChunked, maxKvValueBytes, openResponsesBucket, purgeChunked, putChunked } from "../../../common/src/protocol/index.js";
import type { ResponseRetention, ResponseStore, StoredResponse } from "./response-store.js";

export class JetStreamResponseStore implements ResponseStore {
  private constructor(
    private readonly kv: KV,
    private readonly keyPrefix: string,
    readonly retention: ResponseRetention,
    private readonly maxValueBytes: number,
  ) {}

  /** Opens (or creates) the bucket with this retention, for the engines of `namespace`. */
  static async open(nc: NatsConnection, options: { ttlMs: number; namespace: string }): Promise<JetStreamResponseStore> {
    return new JetStreamResponseStore(await openResponsesBucket(nc, options.ttlMs), `${encodeToken(options.namespace)}.`, { ttlMs: options.ttlMs }, maxKvValueBytes(nc));
  }

  async put(value: StoredResponse): Promise<void> {
    await putChunked(this.kv, this.keyPrefix + value.id, JSON.stringify(value), this.maxValueBytes);
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    // Ids come from clients: one that is no single key token cannot have been stored.
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(id)) return undefined;
    const data = await getChunked(this.kv, this.keyPrefix + id);
    return data === undefined ? undefined : (JSON.parse(new TextDecoder().decode(data)) as StoredResponse);
  }

  async delete(id: string): Promise<boolean> {
    if ((await this.get(id)) === undefined) return false;
    await purgeChunked(this.kv, this.keyPrefix + id);
    return true;
  }
}
