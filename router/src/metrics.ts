/**
 * @module The router's Prometheus metrics (one registry per router): HTTP
 * requests, placements by policy and reason, prefix segments matched, engine
 * retries, live sessions per app, engines seen per pool.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

export class RouterMetrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<"method" | "route" | "status">;
  readonly httpDuration: Histogram<"method" | "route">;
  readonly placements: Counter<"policy" | "reason">;
  readonly prefixSegments: Counter<"outcome">;
  readonly engineRetries: Counter<"cause">;
  readonly rejected: Counter<"code">;
  readonly activeSessions: Gauge<"app">;
  readonly engines: Gauge<"pool">;
  readonly apps: Gauge;
  readonly placementSeconds: Histogram;

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
      help: "Sessions and completions placed, by policy and reason (prefix, prefix-spill, hash, least-loaded, round-robin, no-engine).",
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
    this.rejected = new Counter({ name: "interlace_router_rejected_total", help: "Requests refused by the router, by error code.", labelNames: ["code"], registers });
    this.activeSessions = new Gauge({ name: "interlace_router_active_sessions", help: "Sessions opened through this router whose event stream or completion is open, by app.", labelNames: ["app"], registers });
    this.engines = new Gauge({ name: "interlace_router_engines", help: "Engines with a fresh heartbeat, by pool.", labelNames: ["pool"], registers });
    this.apps = new Gauge({ name: "interlace_router_apps", help: "AgentApp configs this router serves.", registers });
    this.placementSeconds = new Histogram({
      name: "interlace_router_placement_seconds",
      help: "Time from request to an engine accepting it (placement plus retries).",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    });
  }
}
