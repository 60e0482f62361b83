/**
 * @module Watches a KV bucket for as long as the router runs: applies every
 * entry (the initial values, then updates) and restarts the watch if it ever
 * ends, so a reconnect or a server restart cannot leave the view frozen.
 */
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { Logger } from "../../common/src/index.js";

export class KvWatch {
  private stopped = false;
  private iter: { stop(): void } | null = null;
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
    if ((await this.kv.status()).values === 0) this.markLoaded();
    const iter = await this.kv.watch({ key: this.key });
    this.iter = iter;
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

  stop(): void {
    this.stopped = true;
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
