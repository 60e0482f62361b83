/**
 * @module The operator's Prometheus metrics: reconciles by outcome and their
 * duration, work-queue depth and retries, and whether this replica leads.
 * One registry per manager, so several managers in one process (tests) do not
 * collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Everything the runtime and controllers record. */
export interface OperatorMetrics {
  registry: Registry;
  reconciles: Counter<"controller" | "result">;
  reconcileDuration: Histogram<"controller">;
  queueDepth: Gauge<"controller">;
  queueRetries: Counter<"controller">;
  leader: Gauge;
}

/** Creates a fresh registry with the operator's metrics (and, optionally, process metrics). */
export function createOperatorMetrics(opts: { defaultMetrics?: boolean } = {}): OperatorMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    reconciles: new Counter({
      name: "interlace_operator_reconcile_total",
      help: "Reconcile passes by controller and result (success, error, requeue).",
      labelNames: ["controller", "result"],
      registers: [registry],
    }),
    reconcileDuration: new Histogram({
      name: "interlace_operator_reconcile_duration_seconds",
      help: "Time spent in one reconcile pass.",
      labelNames: ["controller"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "interlace_operator_workqueue_depth",
      help: "Keys waiting in a controller's work queue.",
      labelNames: ["controller"],
      registers: [registry],
    }),
    queueRetries: new Counter({
      name: "interlace_operator_workqueue_retries_total",
      help: "Keys re-queued with backoff after a failed pass.",
      labelNames: ["controller"],
      registers: [registry],
    }),
    leader: new Gauge({
      name: "interlace_operator_leader",
      help: "1 while this replica holds the leader lease.",
      registers: [registry],
    }),
  };
}
