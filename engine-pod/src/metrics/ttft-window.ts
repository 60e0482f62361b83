/**
 * @module The engine's recent time to first token: the TTFTs of the sessions
 * and completions whose first token came within the last window, and their
 * 90th percentile, which the heartbeat carries for the autoscaler (an app's
 * `slo.ttftP90Ms`). Bounded: at most `maxSamples` are kept, the oldest
 * dropped first.
 */
import { ENGINE_TTFT_WINDOW_MS } from "../../../common/src/protocol/index.js";

const MAX_SAMPLES = 2048;

export class TtftWindow {
  /** [when recorded (epoch ms), TTFT ms], oldest first. */
  private readonly samples: [number, number][] = [];

  constructor(
    private readonly windowMs = ENGINE_TTFT_WINDOW_MS,
    private readonly now: () => number = Date.now,
    private readonly maxSamples = MAX_SAMPLES,
  ) {}

  record(ttftMs: number): void {
    if (!Number.isFinite(ttftMs) || ttftMs < 0) return;
    this.samples.push([this.now(), ttftMs]);
    if (this.samples.length > this.maxSamples) this.samples.shift();
  }

  /** The 90th percentile (nearest rank) of the TTFTs recorded within the window, ms, rounded; undefined when there are none. */
  p90(): number | undefined {
    const since = this.now() - this.windowMs;
    while (this.samples.length > 0 && this.samples[0]![0] < since) this.samples.shift();
    if (this.samples.length === 0) return undefined;
    const sorted = this.samples.map(([, ms]) => ms).sort((a, b) => a - b);
    return Math.round(sorted[Math.ceil(0.9 * sorted.length) - 1]!);
  }
}
