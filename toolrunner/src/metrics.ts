/**
 * @module Prometheus metrics of a tool runner: calls by tool and outcome,
 * run-time histograms, calls in flight, redeliveries, timeouts, malformed
 * messages, truncated results and calls taken after their runner hold ended.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

export class ToolRunnerMetrics {
  readonly registry: Registry;
  readonly calls: Counter<"tool" | "outcome">;
  readonly duration: Histogram<"tool">;
  readonly queueDelay: Histogram;
  readonly inFlight: Gauge;
  readonly redeliveries: Counter<"tool">;
  readonly timeouts: Counter<"tool">;
  readonly malformed: Counter;
  readonly truncated: Counter<"tool">;
  readonly publishRetries: Counter;
  /** Redelivered calls answered from the effect log: `replayed` (stored result republished), `outcome_unknown` (not run again). */
  readonly effects: Counter<"outcome">;
  readonly maxDeliveries: Counter;
  /** Calls taken after their runner hold ended (`startBy`): answered no_runners, not run. */
  readonly expired: Counter<"tool">;

  constructor(registry = new Registry(), defaults = false) {
    this.registry = registry;
    if (defaults) collectDefaultMetrics({ register: registry });
    const registers = [registry];
    this.calls = new Counter({
      name: "interlace_toolrunner_calls_total",
      help: "Calls handled, by tool and outcome (ok or an error code).",
      labelNames: ["tool", "outcome"],
      registers,
    });
    this.duration = new Histogram({
      name: "interlace_toolrunner_call_duration_seconds",
      help: "The tool implementation's run time.",
      labelNames: ["tool"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.queueDelay = new Histogram({
      name: "interlace_toolrunner_queue_delay_seconds",
      help: "Executor publish to the runner starting the call (clock skew between hosts applies).",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    });
    this.inFlight = new Gauge({ name: "interlace_toolrunner_calls_in_flight", help: "Calls being run now.", registers });
    this.redeliveries = new Counter({
      name: "interlace_toolrunner_redeliveries_total",
      help: "Calls received on a second or later delivery (a runner died or stalled).",
      labelNames: ["tool"],
      registers,
    });
    this.timeouts = new Counter({ name: "interlace_toolrunner_timeouts_total", help: "Calls stopped at their timeout or deadline.", labelNames: ["tool"], registers });
    this.malformed = new Counter({ name: "interlace_toolrunner_malformed_total", help: "Call messages that failed protocol validation.", registers });
    this.truncated = new Counter({ name: "interlace_toolrunner_truncated_total", help: "Results cut at the size cap.", labelNames: ["tool"], registers });
    this.publishRetries = new Counter({ name: "interlace_toolrunner_publish_retries_total", help: "Result publishes retried.", registers });
    this.effects = new Counter({
      name: "interlace_toolrunner_effect_log_total",
      help: "Redelivered calls answered from the effect log instead of running: replayed (stored result republished), outcome_unknown (non-idempotent, started, result lost), rerun (idempotent, started, result lost).",
      labelNames: ["outcome"],
      registers,
    });
    this.maxDeliveries = new Counter({ name: "interlace_toolrunner_max_deliveries_total", help: "Calls that ran out of deliveries, answered with a max_deliveries error.", registers });
    this.expired = new Counter({
      name: "interlace_toolrunner_calls_expired_total",
      help: "Calls taken after the engine stopped holding them for a runner (their startBy passed; the model was told no_runners): answered no_runners, not run.",
      labelNames: ["tool"],
      registers,
    });
  }
}
