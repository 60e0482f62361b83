/**
 * @module Watches a KV bucket for as long as the router runs: applies every
 * entry (the initial values, then updates) and restarts the watch if it ever
 * ends, so a reconnect or a server restart cannot leave the view frozen. A
 * watch does not end when its bucket is lost and created again (a memory
 * bucket after a restart of a single-node NATS): it just stops delivering.
 * So every few seconds the bucket's stream is looked at, and a stream that
 * is gone or is a new one (its creation time changed) restarts the watch.
 */
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { Logger } from "../../common/src/index.js";

/** How often the watched bucket's stream is checked for being the same one. */
export const KV_WATCH_CHECK_MS = 5_000;

export class KvWatch {
  private stopped = false;
  private iter: { stop(): void } | null = null;
  /** Creation time of the stream the current watch reads. */
  private streamCreated: string | undefined;
  private check: NodeJS.Timeout | undefined;
  /** Resolves once the bucket's existing values have been applied. */
  readonly loaded: Promise<void>;
  private markLoaded!: () => void;

  constructor(
    private readonly kv: KV,
    private readonly apply: (entry: KvWatchEntry) => void,
    private readonly log: Logger,
    /** The keys watched (a subject-style filter); every key by default. */
    private readonly key = ">",
  ) {
    this.loaded = new Promise((r) => (this.markLoaded = r));
  }

  async start(): Promise<void> {
    // The initial values end with the entry whose delta (entries still to come) is 0.
    const status = await this.kv.status();
    if (status.values === 0) this.markLoaded();
    this.streamCreated = status.streamInfo.created;
    const iter = await this.kv.watch({ key: this.key });
    this.iter = iter;
    this.check ??= setInterval(() => void this.checkStream(), KV_WATCH_CHECK_MS);
    this.check.unref();
    void (async () => {
      try {
        for await (const entry of iter) {
          this.apply(entry);
          if (entry.isUpdate || entry.delta === 0) this.markLoaded();
        }
      } catch (err) {
        if (!this.stopped) this.log.warn({ err }, "KV watch failed");
      }
      while (!this.stopped) {
        await new Promise((r) => setTimeout(r, 1_000));
        if (this.stopped) return;
        try {
          await this.start();
          return;
        } catch (err) {
          this.log.warn({ err }, "cannot restart the KV watch; retrying");
        }
      }
    })();
  }

  /** Ends the current watch (the loop then starts a new one) when its stream is gone or was created again. */
  private async checkStream(): Promise<void> {
    if (this.stopped || this.iter === null) return;
    const created = await this.kv.status().then(
      (s) => s.streamInfo.created,
      () => undefined,
    );
    if (created !== undefined && created === this.streamCreated) return;
    this.log.warn({ key: this.key }, "the watched bucket is gone or was created again; restarting the watch");
    const iter = this.iter;
    this.iter = null;
    iter.stop();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.check);
    this.iter?.stop();
  }
}

/** An entry's JSON value; `undefined` when it is not JSON (the registries' parsers then report it). */
export function entryJson(entry: KvWatchEntry): unknown {
  try {
    return entry.json();
  } catch {
    return undefined;
  }
}
