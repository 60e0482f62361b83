/**
 * @module Prometheus metrics of the NATS executor: calls by pool, tool and
 * outcome, end-to-end latency and routing overhead (latency minus the tool's
 * own run time), calls in flight, timeouts, publish retries, and completions
 * that were duplicated or dropped (both should stay 0 in a healthy cluster).
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class NatsExecutorMetrics {
  readonly calls: Counter<"pool" | "tool" | "outcome">;
  readonly latency: Histogram<"pool" | "tool">;
  readonly routingOverhead: Histogram<"pool">;
  readonly inFlight: Gauge;
  readonly timeouts: Counter<"pool" | "tool">;
  readonly publishRetries: Counter<"pool">;
  readonly duplicateCompletions: Counter;
  readonly droppedCompletions: Counter<"reason">;
  readonly interrupts: Counter<"kind" | "outcome">;
  readonly runnerHolds: Counter<"pool" | "outcome">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.calls = new Counter({
      name: "interlace_executor_calls_total",
      help: "Tool calls sent over NATS, by pool, tool and outcome (ok or an error code).",
      labelNames: ["pool", "tool", "outcome"],
      registers,
    });
    this.latency = new Histogram({
      name: "interlace_executor_call_latency_seconds",
      help: "Executor publish to result queued for the engine.",
      labelNames: ["pool", "tool"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.routingOverhead = new Histogram({
      name: "interlace_executor_routing_overhead_seconds",
      help: "Call latency minus the tool's own run time: what NATS routing adds.",
      labelNames: ["pool"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.inFlight = new Gauge({ name: "interlace_executor_calls_in_flight", help: "Calls published and not yet completed.", registers });
    this.timeouts = new Counter({
      name: "interlace_executor_timeouts_total",
      help: "Calls whose deadline passed before a result arrived.",
      labelNames: ["pool", "tool"],
      registers,
    });
    this.publishRetries = new Counter({
      name: "interlace_executor_publish_retries_total",
      help: "Call publishes retried (same Nats-Msg-Id) after a failed or unacknowledged attempt.",
      labelNames: ["pool"],
      registers,
    });
    this.duplicateCompletions = new Counter({
      name: "interlace_executor_completions_duplicate_total",
      help: "Results for calls that had already completed (a redelivered call's second result). Never injected.",
      registers,
    });
    this.droppedCompletions = new Counter({
      name: "interlace_executor_completions_dropped_total",
      help: "Messages on this engine's interrupt subjects that were not delivered: late (after timeout/cancel), unknown call or session, invalid.",
      labelNames: ["reason"],
      registers,
    });
    this.interrupts = new Counter({
      name: "interlace_executor_interrupts_total",
      help: "User and agent interrupts received over NATS, by kind and outcome (delivered, unknown_session).",
      labelNames: ["kind", "outcome"],
      registers,
    });
    this.runnerHolds = new Counter({
      name: "interlace_executor_runner_holds_total",
      help: "Calls that waited for a runner of a pool with none live (a pool at zero), by how the wait ended: runner (one came up), timeout (none within the hold: no_runners), ended (the call ended first).",
      labelNames: ["pool", "outcome"],
      registers,
    });
  }
}
