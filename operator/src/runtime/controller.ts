/**
 * @module A controller: informers feed keys into a rate-limited work queue,
 * workers take keys and call the reconciler with just the key — the
 * reconciler reads current state from the caches, never the event payload.
 * Changes to owned children map to their owner's key (through
 * ownerReferences), so a hand-edited or deleted child brings its owner back
 * into reconciliation. Workers run only while started (the manager starts
 * controllers when this replica becomes leader); caches keep filling meanwhile.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { OperatorMetrics } from "../metrics.js";
import { keyOf, splitKey, type InformerHandler } from "./informer.js";
import { defaultControllerRateLimiter, type RateLimiter } from "./rate-limiter.js";
import { WorkQueue } from "./work-queue.js";

/** What a reconciler is asked to do: bring `namespace/name` to its desired state. */
export interface ReconcileRequest {
  namespace: string;
  name: string;
}

/** A pass's outcome; throwing means "retry with backoff". */
export interface ReconcileResult {
  /** Look again after this long even if nothing changes (e.g. waiting on something outside the cluster). */
  requeueAfterMs?: number;
}

export interface Reconciler {
  reconcile(req: ReconcileRequest, signal: AbortSignal): Promise<ReconcileResult>;
}

/** The part of an informer a controller uses (any kind: method parameters are bivariant). */
export interface ObjectSource {
  addHandler(handler: InformerHandler<KubernetesObject>): void;
  list(): readonly KubernetesObject[];
}

/** Another kind whose changes should re-reconcile some primaries. */
export interface Watched {
  informer: ObjectSource;
  /** Keys of the primaries affected by a change to `obj`. */
  map: (obj: KubernetesObject) => string[];
}

export interface ControllerOptions {
  /** Lower-case kind, used in logs and metric labels. */
  name: string;
  /** The primary kind's informer. */
  primary: ObjectSource;
  /** Kind of the primary, matched against children's ownerReferences. */
  primaryKind: string;
  /** Informers of children that carry an ownerReference to a primary. */
  owns?: ObjectSource[];
  watches?: Watched[];
  reconciler: Reconciler;
  workers?: number;
  log: Logger;
  metrics: OperatorMetrics;
  rateLimiter?: () => RateLimiter;
}

/** Connects informers, a work queue and a reconciler. */
export class Controller {
  private queue: WorkQueue | null = null;
  private workers: Promise<void>[] = [];
  private abort: AbortController | null = null;

  constructor(private readonly opts: ControllerOptions) {
    const enqueue = (obj: KubernetesObject): void => this.enqueue(keyOf(obj));
    opts.primary.addHandler({ add: enqueue, update: enqueue, delete: enqueue });
    const enqueueOwner = (obj: KubernetesObject): void => {
      for (const ref of obj.metadata?.ownerReferences ?? []) {
        if (ref.kind === opts.primaryKind && ref.controller) this.enqueue(`${obj.metadata?.namespace ?? ""}/${ref.name}`);
      }
    };
    for (const child of opts.owns ?? []) child.addHandler({ add: enqueueOwner, update: enqueueOwner, delete: enqueueOwner });
    for (const w of opts.watches ?? []) {
      const enqueueMapped = (obj: KubernetesObject): void => {
        for (const key of w.map(obj)) this.enqueue(key);
      };
      w.informer.addHandler({ add: enqueueMapped, update: enqueueMapped, delete: enqueueMapped });
    }
  }

  get name(): string {
    return this.opts.name;
  }

  /** Queues a key if the controller is running (otherwise the start-up pass covers it). */
  enqueue(key: string): void {
    this.queue?.add(key);
  }

  /** Queues every cached primary (something they all read outside the cluster changed, e.g. the trust root). */
  enqueueAll(): void {
    for (const obj of this.opts.primary.list()) this.enqueue(keyOf(obj));
  }

  isRunning(): boolean {
    return this.queue !== null;
  }

  /** Starts workers and queues every cached primary once. */
  start(): void {
    if (this.queue) return;
    const { metrics, name } = this.opts;
    // Export the series from the start: an idle queue reads 0, not "no data".
    metrics.queueDepth.set({ controller: name }, 0);
    this.abort = new AbortController();
    this.queue = new WorkQueue({
      rateLimiter: this.opts.rateLimiter?.() ?? defaultControllerRateLimiter(),
      onDepth: (d) => metrics.queueDepth.set({ controller: name }, d),
    });
    for (const obj of this.opts.primary.list()) this.queue.add(keyOf(obj));
    const n = this.opts.workers ?? 2;
    for (let i = 0; i < n; i++) this.workers.push(this.work(this.queue, this.abort.signal));
    this.opts.log.info({ controller: name, workers: n }, "controller started");
  }

  /** Stops taking keys and waits for passes in flight to finish. */
  async stop(): Promise<void> {
    const queue = this.queue;
    if (!queue) return;
    this.queue = null;
    queue.shutDown();
    this.abort?.abort();
    await Promise.all(this.workers);
    this.workers = [];
    this.opts.metrics.queueDepth.set({ controller: this.opts.name }, 0);
    this.opts.log.info({ controller: this.opts.name }, "controller stopped");
  }

  private async work(queue: WorkQueue, signal: AbortSignal): Promise<void> {
    const { metrics, name, reconciler } = this.opts;
    for (;;) {
      const key = await queue.get();
      if (key === undefined || queue.isShuttingDown()) {
        if (key !== undefined) queue.done(key);
        return;
      }
      const log = this.opts.log.child({ controller: name, key });
      const { namespace, name: objName } = splitKey(key);
      const end = metrics.reconcileDuration.startTimer({ controller: name });
      try {
        const result = await reconciler.reconcile({ namespace: namespace ?? "", name: objName }, signal);
        queue.forget(key);
        if (result.requeueAfterMs !== undefined) {
          queue.addAfter(key, result.requeueAfterMs);
          metrics.reconciles.inc({ controller: name, result: "requeue" });
        } else metrics.reconciles.inc({ controller: name, result: "success" });
        log.debug("reconciled");
      } catch (err) {
        metrics.reconciles.inc({ controller: name, result: "error" });
        metrics.queueRetries.inc({ controller: name });
        log.warn({ err, retries: queue.numRequeues(key) }, "reconcile failed; retrying with backoff");
        queue.addRateLimited(key);
      } finally {
        end();
        queue.done(key);
      }
    }
  }
}
