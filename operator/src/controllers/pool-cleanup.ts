/**
 * @module Cleanup outside the cluster when a ToolPool is deleted: its
 * JetStream durable consumer (and the pool's call stream, which exists only
 * for that pool). Injectable: without a NATS URL the operator has nothing
 * outside the cluster to clean and the finalizer is simply removed.
 */
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats, type NatsSecurity } from "../../../common/src/security/nats-connect.js";
import type { Logger } from "pino";
import { RUNNERS_CONSUMER, poolStream, type PoolRef } from "../../../common/src/protocol/index.js";

/** Removes a deleted pool's state outside Kubernetes; throws to be retried. */
export interface PoolCleanup {
  cleanup(pool: PoolRef): Promise<void>;
  close(): Promise<void>;
}

/** No external state: finalizers are removed at once. */
export const noopPoolCleanup: PoolCleanup = {
  cleanup: async () => {},
  close: async () => {},
};

function notFound(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.ConsumerNotFound || err.code === JetStreamApiCodes.StreamNotFound)
  );
}

/** Deletes the pool's durable consumer, then its call stream; missing ones count as done. */
export class JetStreamPoolCleanup implements PoolCleanup {
  private nc: Promise<NatsConnection> | null = null;

  constructor(
    private readonly natsUrl: string,
    private readonly log: Logger,
    /** The operator's NATS identity and CA, read at connect time. */
    private readonly security: () => NatsSecurity = () => ({}),
  ) {}

  async cleanup(pool: PoolRef): Promise<void> {
    const nc = await this.connection();
    const jsm = await jetstreamManager(nc);
    const stream = poolStream(pool);
    try {
      await jsm.consumers.delete(stream, RUNNERS_CONSUMER);
    } catch (err) {
      if (!notFound(err)) throw err;
    }
    try {
      await jsm.streams.delete(stream);
    } catch (err) {
      if (!notFound(err)) throw err;
    }
    this.log.info({ pool: `${pool.namespace}/${pool.name}`, stream }, "deleted the pool's JetStream consumer and stream");
  }

  async close(): Promise<void> {
    const nc = this.nc;
    this.nc = null;
    if (nc) await (await nc.catch(() => null))?.close();
  }

  private connection(): Promise<NatsConnection> {
    if (!this.nc) {
      const p = connectNats({ servers: this.natsUrl, name: "interlace-operator", security: this.security() });
      // A failed connect is retried on the next cleanup instead of being cached.
      p.catch(() => {
        if (this.nc === p) this.nc = null;
      });
      this.nc = p;
    }
    return this.nc;
  }
}
