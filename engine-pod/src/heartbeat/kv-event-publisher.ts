/**
 * @module The engine's KV events (protocol/kv-events): the prefix blocks its
 * sequences and prefix-store entries hold, published as changes on the
 * pool's KV-event subject so routers keep a per-block index current between
 * heartbeats. The engine's resident prefixes are read from the sequences'
 * actual tokens (engine/resident-prefixes: admission, fill, eviction,
 * compaction, the prefix store's replacements are all seen without hooks),
 * so the publisher compares them with what it last published every
 * `intervalMs` and publishes the difference as one numbered event. The
 * heartbeat takes its prefixes from {@link KvEventPublisher.snapshot}, so
 * a heartbeat names exactly the event its prefixes reflect.
 */
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../../common/src/index.js";
import { kvEventsSubject, type KvEvent, type KvEventPosition, type PoolRef } from "../../../common/src/protocol/index.js";
import type { AdvertisedPrefixes, Engine } from "../engine/index.js";

export interface KvEventOptions {
  pod: string;
  pool: PoolRef;
  /** How often the engine's blocks are compared with the last event. */
  intervalMs: number;
  log: Logger;
}

/** What the routers were last told: block → still filling. */
type Published = Map<string, boolean>;

/** The event that turns `before` into `now` (null: no change). Pure, for tests. */
export function kvEventDiff(before: Published, now: AdvertisedPrefixes): Omit<KvEvent, "pod" | "epoch" | "seq"> | null {
  const filling = new Set(now.filling);
  const stored: string[] = [];
  const nowFilling: string[] = [];
  for (const h of now.hashes) {
    const wasFilling = before.get(h);
    if (filling.has(h)) {
      if (wasFilling !== true) nowFilling.push(h);
    } else if (wasFilling !== false) stored.push(h);
  }
  const held = new Set(now.hashes);
  const removed = [...before.keys()].filter((h) => !held.has(h));
  if (stored.length + nowFilling.length + removed.length === 0) return null;
  return { ...(stored.length > 0 ? { stored } : {}), ...(nowFilling.length > 0 ? { filling: nowFilling } : {}), ...(removed.length > 0 ? { removed } : {}) };
}

export class KvEventPublisher {
  private readonly epoch = randomUUID().slice(0, 8);
  private seq = 0;
  private published: Published = new Map();
  private timer: NodeJS.Timeout | undefined;
  private engine: Pick<Engine, "advertisedPrefixes"> | undefined;
  private readonly subject: string;

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: KvEventOptions,
  ) {
    this.subject = kvEventsSubject(options.pool);
  }

  start(engine: Pick<Engine, "advertisedPrefixes">): void {
    this.engine = engine;
    this.publishChanges();
    this.timer = setInterval(() => this.publishChanges(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Publishes what changed since the last event (nothing when nothing did). */
  publishChanges(): void {
    if (this.engine === undefined || this.nc.isClosed()) return;
    try {
      const now = this.engine.advertisedPrefixes();
      const change = kvEventDiff(this.published, now);
      if (change === null) return;
      const event: KvEvent = { pod: this.options.pod, epoch: this.epoch, seq: this.seq + 1, ...change };
      this.nc.publish(this.subject, JSON.stringify(event));
      this.seq = event.seq;
      const filling = new Set(now.filling);
      this.published = new Map(now.hashes.map((h) => [h, filling.has(h)]));
    } catch (err) {
      this.options.log.warn({ err }, "KV event not published");
    }
  }

  /** The blocks as last published (after publishing any change) and that event's position: a heartbeat's prefixes. */
  snapshot(): { prefixes: AdvertisedPrefixes; position: KvEventPosition } {
    this.publishChanges();
    const hashes = [...this.published.keys()];
    return { prefixes: { hashes, filling: hashes.filter((h) => this.published.get(h) === true) }, position: { epoch: this.epoch, seq: this.seq } };
  }

  close(): void {
    clearInterval(this.timer);
    this.engine = undefined;
  }
}
