/**
 * @module An informer: a local cache of one kind kept current by list + watch.
 * It lists once, then watches from the list's resourceVersion with bookmarks
 * (so a quiet watch still advances its resume point), resumes from the last
 * seen version when a watch ends, relists when the API server answers 410 Gone
 * (the version was compacted away), and backs off exponentially on other
 * failures. Handlers only learn *that* something changed; controllers
 * reconcile from the cache, never from the event payload.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { isGone } from "./errors.js";
import type { KubeClient, WatchEvent } from "./kube-client.js";
import type { ResourceType } from "./resource-type.js";
import { abortableDelay } from "./delay.js";

/** Callbacks for cache changes; `resync` re-announces every cached object. */
export interface InformerHandler<T> {
  add?: (obj: T) => void;
  update?: (oldObj: T, newObj: T) => void;
  delete?: (obj: T) => void;
}

export interface InformerOptions {
  client: Pick<KubeClient, "list" | "watch">;
  type: ResourceType;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  labelSelector?: string;
  log: Logger;
  /** Re-announce every cached object this often (0: never). Catches anything a handler missed. */
  resyncMs?: number;
  /** Server-side timeout of each watch request. */
  watchTimeoutSeconds?: number;
  /** Backoff after failed list/watch calls. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Watch from this version first instead of listing (a resume point kept elsewhere). */
  startResourceVersion?: string;
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** `namespace/name` (or `name` for cluster-scoped objects): the work-queue key. */
export function keyOf(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? "";
  return ns ? `${ns}/${name}` : name;
}

/** Splits a key made by {@link keyOf}. */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const i = key.indexOf("/");
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** A list+watch cache of one kind. */
export class Informer<T extends KubernetesObject> {
  private readonly cache = new Map<string, T>();
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly abort = new AbortController();
  private resourceVersion = "";
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private loop: Promise<void> | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;
  /** How many full lists ran (the first one and each relist); tests assert relists with it. */
  listCount = 0;

  constructor(private readonly opts: InformerOptions) {
    if (opts.startResourceVersion !== undefined) this.resourceVersion = opts.startResourceVersion;
  }

  addHandler(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  /** Starts the list/watch loop; returns at once (see {@link waitForSync}). */
  start(): void {
    if (this.loop) return;
    this.loop = this.run();
    const resync = this.opts.resyncMs ?? 0;
    if (resync > 0) {
      this.resyncTimer = setInterval(() => {
        for (const obj of this.cache.values()) for (const h of this.handlers) h.update?.(obj, obj);
      }, resync);
      this.resyncTimer.unref();
    }
  }

  /** Stops watching; the cache keeps its last contents. */
  async stop(): Promise<void> {
    this.abort.abort();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const w of this.syncWaiters) w();
    this.syncWaiters = [];
    await this.loop;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list has filled the cache (or the informer stopped). */
  waitForSync(): Promise<void> {
    if (this.synced || this.abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(namespace ? `${namespace}/${name}` : name);
  }

  list(namespace?: string): T[] {
    const all = [...this.cache.values()];
    return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }

  /** The version the next watch resumes from ("" means the next pass relists). */
  latestResourceVersion(): string {
    return this.resourceVersion;
  }

  private async run(): Promise<void> {
    const { client, type, log } = this.opts;
    const signal = this.abort.signal;
    const delay = this.opts.delay ?? abortableDelay;
    const base = this.opts.backoffBaseMs ?? 200;
    const max = this.opts.backoffMaxMs ?? 30_000;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (this.resourceVersion === "") await this.relist();
        if (signal.aborted) break;
        const startedAt = Date.now();
        let events = 0;
        await client.watch(
          type,
          this.opts.namespace,
          {
            resourceVersion: this.resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: this.opts.watchTimeoutSeconds ?? 300,
            signal,
            ...(this.opts.labelSelector !== undefined ? { labelSelector: this.opts.labelSelector } : {}),
          },
          (ev) => {
            events++;
            this.onEvent(ev);
          },
        );
        // A watch the server closes at once with nothing in it (a proxy, an
        // overloaded server) must not turn into a hot loop: pace it as a failure.
        if (events === 0 && Date.now() - startedAt < 1000 && !signal.aborted) {
          failures++;
          await delay(Math.min(max, base * 2 ** (failures - 1)), signal);
        } else failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          log.info({ kind: type.kind }, "watch resource version expired (410 Gone); relisting");
          this.resourceVersion = "";
          continue;
        }
        failures++;
        const wait = Math.min(max, base * 2 ** (failures - 1));
        log.warn({ err, kind: type.kind, retryInMs: wait }, "list/watch failed; retrying");
        await delay(wait, signal);
      }
    }
  }

  private async relist(): Promise<void> {
    const list = await this.opts.client.list<T>(this.opts.type, this.opts.namespace, {
      ...(this.opts.labelSelector !== undefined ? { labelSelector: this.opts.labelSelector } : {}),
    });
    this.listCount++;
    const seen = new Set<string>();
    for (const obj of list.items) {
      seen.add(keyOf(obj));
      this.upsert(obj);
    }
    for (const [key, old] of [...this.cache]) {
      if (seen.has(key)) continue;
      this.cache.delete(key);
      for (const h of this.handlers) h.delete?.(old);
    }
    this.resourceVersion = list.resourceVersion;
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters) w();
      this.syncWaiters = [];
    }
  }

  private onEvent(ev: WatchEvent): void {
    switch (ev.type) {
      case "ERROR":
        // The server reports an expired version in-band (HTTP 200, then an ERROR
        // event carrying a Status); the stream ends right after, and we relist.
        if (ev.object.code === 410) this.resourceVersion = "";
        else this.opts.log.warn({ kind: this.opts.type.kind, status: ev.object }, "watch error event");
        return;
      case "BOOKMARK":
        break;
      case "ADDED":
      case "MODIFIED":
        this.upsert(ev.object as T);
        break;
      case "DELETED": {
        const key = keyOf(ev.object);
        const old = this.cache.get(key);
        this.cache.delete(key);
        for (const h of this.handlers) h.delete?.((old ?? ev.object) as T);
        break;
      }
    }
    const rv = ev.object.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
  }

  private upsert(obj: T): void {
    const key = keyOf(obj);
    const old = this.cache.get(key);
    if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    this.cache.set(key, obj);
    for (const h of this.handlers) {
      if (old) h.update?.(old, obj);
      else h.add?.(obj);
    }
  }
}
