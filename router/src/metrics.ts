/**
 * @module The router's Prometheus metrics (one registry per router): HTTP
 * requests, placements by policy and reason, prefix segments matched, engine
 * retries, live sessions per app, engines seen per pool; programs (by
 * outcome, end-to-end latency), program requests by deduced objective,
 * task-group sizes, and program prompt tokens filled vs forked; the
 * cold-start hold (requests held per pool, hold time, refusals); writes
 * to the shared placement reservations.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

export class RouterMetrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<"method" | "route" | "status">;
  readonly httpDuration: Histogram<"method" | "route">;
  readonly placements: Counter<"policy" | "reason">;
  readonly prefixSegments: Counter<"outcome">;
  readonly engineRetries: Counter<"cause">;
  readonly prefixHolds: Counter<"outcome">;
  readonly prefixWarms: Counter<"outcome">;
  readonly rejected: Counter<"code">;
  readonly malformedMessages: Counter<"source">;
  readonly activeSessions: Gauge<"app">;
  readonly engines: Gauge<"pool">;
  readonly apps: Gauge;
  readonly placementSeconds: Histogram;
  readonly programs: Counter<"outcome">;
  readonly programSeconds: Histogram;
  readonly programRequests: Counter<"objective">;
  readonly taskGroupSize: Histogram;
  readonly programPrefixTokens: Counter<"kind">;
  readonly programsLive: Gauge;
  readonly coldStartHeld: Gauge<"pool">;
  readonly coldStartHoldSeconds: Histogram<"outcome">;
  readonly coldStartRefusals: Counter<"reason">;
  readonly capacityQueued: Gauge<"pool">;
  readonly capacityQueueSeconds: Histogram<"outcome">;
  readonly capacityQueueRefusals: Counter<"reason">;
  readonly reservationWrites: Counter<"write" | "outcome">;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({ name: "interlace_router_http_requests_total", help: "HTTP requests by route and status.", labelNames: ["method", "route", "status"], registers });
    this.httpDuration = new Histogram({
      name: "interlace_router_http_request_duration_seconds",
      help: "HTTP request duration (event streams: until the stream ends).",
      labelNames: ["method", "route"],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
      registers,
    });
    this.placements = new Counter({
      name: "interlace_router_placements_total",
      help: "Sessions and completions placed, by policy and reason (prefix, prefix-slack, prefix-spill, hash, least-loaded, round-robin, no-engine).",
      labelNames: ["policy", "reason"],
      registers,
    });
    this.prefixSegments = new Counter({
      name: "interlace_router_prefix_segments_total",
      help: "Prefix-hash chain entries of placed requests: resident on the chosen engine (hit) or not (miss).",
      labelNames: ["outcome"],
      registers,
    });
    this.engineRetries = new Counter({
      name: "interlace_router_engine_retries_total",
      help: "Placements that moved on to the next engine, by cause (capacity, unavailable, unreachable, timeout).",
      labelNames: ["cause"],
      registers,
    });
    this.prefixHolds = new Counter({
      name: "interlace_router_prefix_holds_total",
      help: "Placements that waited for the full engine holding their prefix, by outcome (placed there, or spilled when the wait ran out).",
      labelNames: ["outcome"],
      registers,
    });
    this.prefixWarms = prefixWarmsCounter("interlace_router_prefix_warms_total", registers);
    this.rejected = new Counter({ name: "interlace_router_rejected_total", help: "Requests refused by the router, by error code.", labelNames: ["code"], registers });
    this.malformedMessages = new Counter({
      name: "interlace_router_malformed_messages_total",
      help: "NATS messages and KV entries dropped as malformed (apps, engines, kv_events, warm_arrivals, queue_heads), by source.",
      labelNames: ["source"],
      registers,
    });
    this.activeSessions = new Gauge({ name: "interlace_router_active_sessions", help: "Sessions opened through this router whose event stream or completion is open, by app.", labelNames: ["app"], registers });
    this.engines = new Gauge({ name: "interlace_router_engines", help: "Engines with a fresh heartbeat, by pool.", labelNames: ["pool"], registers });
    this.apps = new Gauge({ name: "interlace_router_apps", help: "AgentApp configs this router serves.", registers });
    this.placementSeconds = new Histogram({
      name: "interlace_router_placement_seconds",
      help: "Time from request to an engine accepting it (placement plus retries).",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
      registers,
    });
    this.programs = new Counter({ name: "interlace_router_programs_total", help: "Programs finished, by outcome (succeeded, failed, cancelled).", labelNames: ["outcome"], registers });
    this.programSeconds = new Histogram({
      name: "interlace_router_program_seconds",
      help: "End-to-end program latency: submission to the last variable settled.",
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    this.programRequests = new Counter({
      name: "interlace_router_program_requests_total",
      help: "Program requests dispatched to engines, by deduced objective (latency, task-group, throughput).",
      labelNames: ["objective"],
      registers,
    });
    this.taskGroupSize = new Histogram({ name: "interlace_router_task_group_size", help: "Requests per task group, at dispatch.", buckets: [2, 4, 8, 16, 32, 64, 128], registers });
    this.programPrefixTokens = new Counter({
      name: "interlace_router_program_prompt_tokens_total",
      help: "Prompt tokens of program requests: filled (prefilled by the engine) or forked (copied from another sequence or kept from the prefix cache).",
      labelNames: ["kind"],
      registers,
    });
    this.programsLive = new Gauge({ name: "interlace_router_programs_live", help: "Programs this router is running.", registers });
    this.coldStartHeld = new Gauge({
      name: "interlace_router_cold_start_held_requests",
      help: "Requests held now waiting for a ready engine of their pool (scaled to zero or starting), by pool.",
      labelNames: ["pool"],
      registers,
    });
    this.coldStartHoldSeconds = new Histogram({
      name: "interlace_router_cold_start_hold_seconds",
      help: "How long held requests waited for a ready engine, by outcome (ready, timeout, aborted: the client left).",
      labelNames: ["outcome"],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
      registers,
    });
    this.coldStartRefusals = new Counter({
      name: "interlace_router_cold_start_refusals_total",
      help: "Requests refused with 503 while their pool had no ready engine, by reason (timeout: the hold ran out; queue_full: the hold's bound was reached).",
      labelNames: ["reason"],
      registers,
    });
    this.capacityQueued = new Gauge({
      name: "interlace_router_capacity_queued_requests",
      help: "Requests waiting now for a free sequence while every engine of their pool is full (capacity-queue.ts), by pool.",
      labelNames: ["pool"],
      registers,
    });
    this.capacityQueueSeconds = new Histogram({
      name: "interlace_router_capacity_queue_seconds",
      help: "How long queued requests waited for a free sequence, by outcome (placed; timeout; aborted: the client left; failed: the request's own error).",
      labelNames: ["outcome"],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120],
      registers,
    });
    this.capacityQueueRefusals = new Counter({
      name: "interlace_router_capacity_queue_refusals_total",
      help: "Requests refused with 429 while every engine of their pool was full, by reason (timeout: the queue wait ran out; queue_full: the queue's bound was reached).",
      labelNames: ["reason"],
      registers,
    });
    this.reservationWrites = reservationWritesCounter("interlace_router_reservation_kv_writes_total", registers);
  }
}

/** Hot-prefix warms by outcome, as the router and the endpoint picker both count them (prefix-warmer.ts). */
export function prefixWarmsCounter(name: string, registers: Registry[]): Counter<"outcome"> {
  return new Counter({
    name,
    help: "Hot-prefix warms asked of an idle engine, by outcome: warmed, held (already there), busy (engine refused for now), refused (no store or no shared prefix there), failed.",
    labelNames: ["outcome"],
    registers,
  });
}

/** KV writes to `interlace-reservations` (shared-reservations.ts): over placements, the round trips each placement pays. */
export function reservationWritesCounter(name: string, registers: Registry[]): Counter<"write" | "outcome"> {
  return new Counter({
    name,
    help: "Writes to the shared placement reservations (interlace-reservations), by write (reserve, release) and outcome (written, conflict: another front door wrote first).",
    labelNames: ["write", "outcome"],
    registers,
  });
}
