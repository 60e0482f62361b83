/**
 * @module The picker's Prometheus metrics (one registry per process):
 * ext_proc streams by outcome, picks by placement reason, prefix segments
 * matched, waits for a full engine, the time from the request's last body
 * byte to the pick, engines seen, writes to the shared placement
 * reservations, and hot-prefix warms.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { prefixWarmsCounter, reservationWritesCounter } from "../metrics.js";

export class PickerMetrics {
  readonly registry = new Registry();
  readonly streams: Counter<"outcome">;
  readonly picks: Counter<"reason">;
  readonly prefixSegments: Counter<"outcome">;
  readonly holds: Counter<"outcome">;
  readonly rejected: Counter<"status">;
  readonly pickSeconds: Histogram;
  readonly inFlight: Gauge;
  readonly engines: Gauge;
  readonly reservationWrites: Counter<"write" | "outcome">;
  readonly prefixWarms: Counter<"outcome">;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.streams = new Counter({
      name: "interlace_picker_streams_total",
      help: "ext_proc streams (one per HTTP request through the gateway), by outcome: routed, answered (the picker answered itself: an error or an app description), aborted (the data plane went before the end).",
      labelNames: ["outcome"],
      registers,
    });
    this.picks = new Counter({
      name: "interlace_picker_picks_total",
      help: "Endpoint picks by reason (prefix, prefix-slack, prefix-spill, hash, least-loaded, round-robin, pinned: a session's own engine; shed, no-engine: refused).",
      labelNames: ["reason"],
      registers,
    });
    this.prefixSegments = new Counter({
      name: "interlace_picker_prefix_segments_total",
      help: "Prefix-hash chain entries of placed requests: resident on the chosen engine (hit) or not (miss).",
      labelNames: ["outcome"],
      registers,
    });
    this.holds = new Counter({
      name: "interlace_picker_holds_total",
      help: "Picks that waited for a full engine, by outcome (placed on the prefix's engine, spilled, shed).",
      labelNames: ["outcome"],
      registers,
    });
    this.rejected = new Counter({ name: "interlace_picker_rejected_total", help: "Requests the picker answered with an error, by HTTP status.", labelNames: ["status"], registers });
    this.pickSeconds = new Histogram({
      name: "interlace_picker_pick_seconds",
      help: "Time from the request's last body byte reaching the picker to its answer with the endpoints (placement, plus any wait for a full engine).",
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    });
    this.inFlight = new Gauge({ name: "interlace_picker_streams_in_flight", help: "ext_proc streams open now.", registers });
    this.engines = new Gauge({ name: "interlace_picker_engines", help: "Ready engines of the pool with a fresh heartbeat.", registers });
    this.reservationWrites = reservationWritesCounter("interlace_picker_reservation_kv_writes_total", registers);
    this.prefixWarms = prefixWarmsCounter("interlace_picker_prefix_warms_total", registers);
  }
}
