/**
 * @module The operator's Prometheus metrics: reconciles by outcome and their
 * duration, work-queue depth and retries, whether this replica leads, and
 * the joint autoscaler's decisions and signals.
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
  /** The joint autoscaler's decisions and the signals they read (the signals also for external-mode pools, for HPA or KEDA). */
  autoscaler: AutoscalerMetrics;
}

export interface AutoscalerMetrics {
  desiredReplicas: Gauge<"kind" | "pool_namespace" | "pool">;
  decisions: Counter<"kind" | "pool_namespace" | "pool" | "direction">;
  toolCallsPending: Gauge<"pool_namespace" | "pool">;
  toolCallsRunning: Gauge<"pool_namespace" | "pool">;
  toolWaitP90: Gauge<"pool_namespace" | "pool">;
  engineQueuedSessions: Gauge<"pool_namespace" | "pool">;
  engineActiveSessions: Gauge<"pool_namespace" | "pool">;
  engineKvUse: Gauge<"pool_namespace" | "pool">;
  engineHeldRequests: Gauge<"pool_namespace" | "pool">;
  engineTtftP90: Gauge<"pool_namespace" | "pool">;
  earlyWakes: Counter<"kind" | "pool_namespace" | "pool">;
  pressurePasses: Counter<"kind" | "pool_namespace" | "pool">;
  toolCallArrivalRate: Gauge<"pool_namespace" | "pool">;
  toolCallTime: Gauge<"pool_namespace" | "pool">;
}

function autoscalerMetrics(registry: Registry): AutoscalerMetrics {
  const registers = [registry];
  // Not `namespace`: a Prometheus scrape sets that target label to the operator pod's own namespace.
  const pool = ["pool_namespace", "pool"] as const;
  return {
    desiredReplicas: new Gauge({
      name: "interlace_autoscaler_desired_replicas",
      help: "Replicas the joint autoscaler wants for a builtin-mode pool (kind EnginePool or ToolPool).",
      labelNames: ["kind", ...pool],
      registers,
    }),
    decisions: new Counter({
      name: "interlace_autoscaler_decisions_total",
      help: "Replica changes the joint autoscaler made, by pool and direction (up, down).",
      labelNames: ["kind", ...pool, "direction"],
      registers,
    }),
    toolCallsPending: new Gauge({ name: "interlace_autoscaler_tool_calls_pending", help: "Calls waiting on a ToolPool's JetStream consumer (num_pending).", labelNames: pool, registers }),
    toolCallsRunning: new Gauge({ name: "interlace_autoscaler_tool_calls_running", help: "Calls taken by a ToolPool's runners and not yet acknowledged (num_ack_pending).", labelNames: pool, registers }),
    toolWaitP90: new Gauge({ name: "interlace_autoscaler_tool_wait_p90_seconds", help: "p90 wait from publish to a runner starting the call over the last 10 s (the slowest runner's; absent when no call started).", labelNames: pool, registers }),
    toolCallArrivalRate: new Gauge({
      name: "interlace_autoscaler_tool_call_arrival_rate",
      help: "Calls arriving on a ToolPool's consumer per second over the last 10 s (delivered plus the growth of those pending): the offered-load rule's λ. Absent until two samples with counters.",
      labelNames: pool,
      registers,
    }),
    toolCallTime: new Gauge({
      name: "interlace_autoscaler_tool_call_time_seconds",
      help: "A ToolPool's calls' mean time on a runner over the last 60 s (calls running on average over calls finished): the offered-load rule's W. Absent until a call finished in the window.",
      labelNames: pool,
      registers,
    }),
    engineQueuedSessions: new Gauge({ name: "interlace_autoscaler_engine_queued_sessions", help: "Sessions waiting for a sequence on an EnginePool's ready engines.", labelNames: pool, registers }),
    engineActiveSessions: new Gauge({ name: "interlace_autoscaler_engine_active_sessions", help: "Live sessions on an EnginePool's ready engines (running, trapped or queued).", labelNames: pool, registers }),
    engineTtftP90: new Gauge({
      name: "interlace_autoscaler_engine_ttft_p90_seconds",
      help: "The highest recent (30 s) time-to-first-token p90 an EnginePool's ready engines report; absent while none reports one.",
      labelNames: pool,
      registers,
    }),
    engineKvUse: new Gauge({ name: "interlace_autoscaler_engine_kv_use_ratio", help: "KV cells in use as a share of an EnginePool's ready engines' cells.", labelNames: pool, registers }),
    earlyWakes: new Counter({
      name: "interlace_autoscaler_early_wakes_total",
      help: "Autoscaler passes run between ticks because work waited for a builtin-mode pool at zero (calls pending on a ToolPool, requests held for an EnginePool).",
      labelNames: ["kind", ...pool],
      registers,
    }),
    pressurePasses: new Counter({
      name: "interlace_autoscaler_pressure_passes_total",
      help: "Autoscaler passes run between ticks because the decision over a fresh sample scaled a builtin-mode pool with replicas up (counted per pool it scaled).",
      labelNames: ["kind", ...pool],
      registers,
    }),
    engineHeldRequests: new Gauge({
      name: "interlace_autoscaler_engine_held_requests",
      help: "Requests the routers hold for an EnginePool with no ready engine (a cold start); above 0 on a pool at zero, the pool wakes.",
      labelNames: pool,
      registers,
    }),
  };
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
    autoscaler: autoscalerMetrics(registry),
  };
}
