/**
 * @module An informer: a local cache of one kind kept current by list +
 * watch, built on `@kubernetes/client-node`'s `ListWatch` (which lists, watches
 * from the list's resourceVersion, resumes from the last seen version when a
 * watch ends, and relists on 410 Gone, in-band or as an HTTP status). What
 * this adds around it, because `ListWatch` 1.4.0 lacks it:
 *
 * - Retry. `ListWatch` reports a failed list or watch to its error callbacks
 *   and stops; here it is restarted with capped exponential backoff.
 * - Bookmarks and a server-side watch timeout: its `Watch` sends only
 *   resourceVersion and selectors, so a {@link PacedWatch} adds
 *   `allowWatchBookmarks` (a quiet watch still advances its resume point) and
 *   `timeoutSeconds`.
 * - Pacing. A watch the server closes at once with nothing in it (a proxy, an
 *   overloaded server) is reopened by `ListWatch` immediately; the
 *   {@link PacedWatch} delays such ends like failures, so it never spins.
 * - Readiness: {@link Informer.waitForSync} resolves after the first list.
 *
 * Handlers only learn *that* something changed; controllers reconcile from
 * the cache, never from the event payload.
 */
import { ADD, DELETE, ERROR, ListWatch, UPDATE, Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { abortableDelay } from "./delay.js";
import type { KubeClient } from "./kube-client.js";
import { collectionPath, type ResourceType } from "./resource-type.js";

/** Callbacks for cache changes; `resync` re-announces every cached object as an update. */
export interface InformerHandler<T> {
  add?: (obj: T) => void;
  update?: (obj: T) => void;
  delete?: (obj: T) => void;
}

/** The watch call `ListWatch` makes (the library `Watch`'s signature). */
export type WatchFn = Watch["watch"];

export interface InformerOptions {
  client: Pick<KubeClient, "list" | "kubeConfig">;
  type: ResourceType;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  labelSelector?: string;
  log: Logger;
  /** Re-announce every cached object this often (0: never). Catches anything a handler missed. */
  resyncMs?: number;
  /** Server-side timeout of each watch request. */
  watchTimeoutSeconds?: number;
  /** Backoff after failed list/watch calls and after empty watches. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The watch transport (default: the library `Watch` on the client's KubeConfig); tests script it. */
  watch?: WatchFn;
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

/**
 * The library `Watch` with bookmarks and a server timeout requested, and with
 * watches that end at once and empty paced like failures (the delay runs
 * before `ListWatch` learns the watch ended, so its immediate reconnect waits).
 */
export class PacedWatch extends Watch {
  constructor(
    kc: KubeConfig,
    private readonly hooks: {
      timeoutSeconds: number;
      /** A watch opened: `ListWatch` has applied the list before it. */
      onOpen: () => void;
      /** True once the informer stopped. */
      stopped: () => boolean;
      /** How long to wait before reporting the end of a watch that ended at once and empty (0: none). */
      emptyEnd: (quick: boolean) => number;
      delay: (ms: number) => Promise<void>;
      transport?: WatchFn;
    },
  ) {
    super(kc);
  }

  override async watch(path: string, query: Record<string, string | number | boolean | undefined>, callback: (phase: string, obj: any, raw?: any) => void, done: (err: any) => void): Promise<AbortController> {
    // ListWatch checks for stop() only before it lists; a stop() that lands
    // during the list would otherwise still open a watch that nobody closes.
    if (this.hooks.stopped()) {
      const ac = new AbortController();
      ac.abort();
      queueMicrotask(() => done(null));
      return ac;
    }
    this.hooks.onOpen();
    const startedAt = Date.now();
    let events = 0;
    const params = { ...query, allowWatchBookmarks: true, timeoutSeconds: this.hooks.timeoutSeconds };
    const counted = (phase: string, obj: any, raw?: any): void => {
      events++;
      callback(phase, obj, raw);
    };
    const paced = (err: unknown): void => {
      const wait = err ? 0 : this.hooks.emptyEnd(events === 0 && Date.now() - startedAt < 1000);
      if (wait > 0) void this.hooks.delay(wait).then(() => done(null));
      else done(err);
    };
    return this.hooks.transport ? this.hooks.transport(path, params, counted, paced) : super.watch(path, params, counted, paced);
  }
}

/** A list+watch cache of one kind. */
export class Informer<T extends KubernetesObject> {
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly lw: ListWatch<T>;
  private abort = new AbortController();
  private running = false;
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private resyncTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private restart: Promise<void> | null = null;
  /** How many full lists ran (the first one and each relist); tests assert relists with it. */
  listCount = 0;

  constructor(private readonly opts: InformerOptions) {
    const { client, type, namespace, labelSelector } = opts;
    const watch = new PacedWatch(client.kubeConfig, {
      timeoutSeconds: opts.watchTimeoutSeconds ?? 300,
      onOpen: () => {
        if (this.listCount > 0) this.markSynced();
      },
      stopped: () => !this.running,
      emptyEnd: (quick) => {
        if (!quick) {
          this.failures = 0;
          return 0;
        }
        return this.nextBackoff();
      },
      delay: (ms) => (opts.delay ?? abortableDelay)(ms, this.abort.signal),
      ...(opts.watch ? { transport: opts.watch } : {}),
    });
    const list = async (): Promise<KubernetesListObject<T>> => {
      const l = await client.list<T>(type, namespace, labelSelector !== undefined ? { labelSelector } : {});
      this.listCount++;
      return { apiVersion: "v1", kind: "List", metadata: { resourceVersion: l.resourceVersion }, items: l.items };
    };
    this.lw = new ListWatch<T>(collectionPath(type, namespace), watch, list, false, labelSelector);
    this.lw.on(ADD, (o) => this.handlers.forEach((h) => h.add?.(o)));
    this.lw.on(UPDATE, (o) => this.handlers.forEach((h) => h.update?.(o)));
    this.lw.on(DELETE, (o) => this.handlers.forEach((h) => h.delete?.(o)));
    this.lw.on(ERROR, (err) => this.onError(err));
  }

  addHandler(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  /** Starts (or, after {@link stop}, restarts) the list/watch; returns at once (see {@link waitForSync}). */
  start(): void {
    if (this.running) return;
    this.running = true;
    if (this.abort.signal.aborted) this.abort = new AbortController();
    void this.lw.start();
    const resync = this.opts.resyncMs ?? 0;
    if (resync > 0) {
      this.resyncTimer = setInterval(() => {
        for (const obj of this.lw.list()) for (const h of this.handlers) h.update?.(obj);
      }, resync);
      this.resyncTimer.unref();
    }
  }

  /** Stops watching; the cache keeps its contents and resume point. */
  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.resyncTimer = null;
    for (const w of this.syncWaiters) w();
    this.syncWaiters = [];
    await this.lw.stop();
    await this.restart;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list has filled the cache (or the informer stopped). */
  waitForSync(): Promise<void> {
    if (this.synced || !this.running) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.lw.get(name, namespace);
  }

  list(namespace?: string): T[] {
    return [...this.lw.list(namespace)];
  }

  /** The version the next watch resumes from ("" means the next pass relists). */
  latestResourceVersion(): string {
    return this.lw.latestResourceVersion();
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const w of this.syncWaiters) w();
    this.syncWaiters = [];
  }

  private nextBackoff(): number {
    this.failures++;
    return Math.min(this.opts.backoffMaxMs ?? 30_000, (this.opts.backoffBaseMs ?? 200) * 2 ** (this.failures - 1));
  }

  /** `ListWatch` stopped on a failed list or watch: restart it after a backoff. */
  private onError(err: unknown): void {
    if (!this.running || this.restart) return;
    const wait = this.nextBackoff();
    const { log, type } = this.opts;
    log.warn({ err, kind: type.kind, retryInMs: wait }, "list/watch failed; retrying");
    this.restart = (async () => {
      await (this.opts.delay ?? abortableDelay)(wait, this.abort.signal);
      this.restart = null;
      if (this.running) void this.lw.start();
    })();
  }
}
