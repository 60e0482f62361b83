/**
 * @module The autoscale bench's load trace: a piecewise-constant arrival
 * rate over time, and the seeded Poisson task arrivals it gives. A trace
 * comes from a file (`--trace FILE`: a JSON list of `{"at_s", "rate"}`
 * points, each rate holding until the next point; the last point ends the
 * trace unless `--duration` says otherwise) or from the flags' default
 * shape: base rate, a step up, a short burst on top, and back to base.
 * Pure, so every policy runs on the same arrivals.
 */
import { seededRandom } from "../lib/stats.js";

/** One point of a trace: from `atS` seconds on, tasks arrive at `rate` per second. */
export interface TracePoint {
  atS: number;
  rate: number;
}

export interface Trace {
  /** Sorted by `atS`, the first at 0. */
  points: TracePoint[];
  durationS: number;
}

/**
 * Parses a trace file's text: a non-empty JSON list of `{"at_s": seconds,
 * "rate": tasks per second}`, `at_s` strictly increasing from 0. The trace
 * ends at `durationS` when given, else at the last point's `at_s` (so a
 * file typically ends with `{"at_s": 300, "rate": 0}`). Errors name the
 * offending entry and field.
 */
export function parseTrace(text: string, durationS?: number): Trace {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new Error(`trace: not JSON (${(err as Error).message})`);
  }
  if (!Array.isArray(data) || data.length === 0) throw new Error("trace: must be a non-empty JSON list of {at_s, rate}");
  const points: TracePoint[] = data.map((p: unknown, i) => {
    if (typeof p !== "object" || p === null) throw new Error(`trace[${i}]: must be an object {at_s, rate}`);
    const { at_s, rate } = p as Record<string, unknown>;
    if (typeof at_s !== "number" || !Number.isFinite(at_s) || at_s < 0) throw new Error(`trace[${i}].at_s: must be a number of seconds ≥ 0, got ${JSON.stringify(at_s)}`);
    if (typeof rate !== "number" || !Number.isFinite(rate) || rate < 0) throw new Error(`trace[${i}].rate: must be a number of tasks per second ≥ 0, got ${JSON.stringify(rate)}`);
    return { atS: at_s, rate };
  });
  if (points[0]!.atS !== 0) throw new Error("trace[0].at_s: the first point must be at 0");
  for (let i = 1; i < points.length; i++) {
    if (points[i]!.atS <= points[i - 1]!.atS) throw new Error(`trace[${i}].at_s: must be later than trace[${i - 1}].at_s`);
  }
  const end = durationS ?? points.at(-1)!.atS;
  if (!(end > 0)) throw new Error("trace: lasts 0 s (end it with a later point, or pass --duration)");
  return { points, durationS: end };
}

export interface ShapeOptions {
  baseRate: number;
  stepRate: number;
  burstRate: number;
  durationS: number;
}

/**
 * The default shape, as fractions of the duration: base for the first 20%,
 * the step from 20% to 80%, the burst from 45% to 60% (on top of the step),
 * and base again for the last 20% (where the scalers scale back down).
 */
export function shapedTrace(o: ShapeOptions): Trace {
  const at = (f: number): number => Math.round(o.durationS * f * 1000) / 1000;
  return {
    points: [
      { atS: 0, rate: o.baseRate },
      { atS: at(0.2), rate: o.stepRate },
      { atS: at(0.45), rate: o.burstRate },
      { atS: at(0.6), rate: o.stepRate },
      { atS: at(0.8), rate: o.baseRate },
    ],
    durationS: o.durationS,
  };
}

/** The rate at `s` seconds. */
export function rateAt(trace: Trace, s: number): number {
  let rate = 0;
  for (const p of trace.points) if (p.atS <= s) rate = p.rate;
  return s < trace.durationS ? rate : 0;
}

/**
 * Seeded Poisson arrivals (ms after the start) following the trace: within
 * each constant-rate stretch, exponential gaps at that rate. The same trace
 * and seed give the same list.
 */
export function traceArrivals(trace: Trace, seed: number): number[] {
  const rnd = seededRandom(seed);
  const out: number[] = [];
  const bounds = trace.points.map((p, i) => ({ from: p.atS, to: Math.min(trace.points[i + 1]?.atS ?? trace.durationS, trace.durationS), rate: p.rate }));
  for (const { from, to, rate } of bounds) {
    if (rate <= 0 || to <= from) continue;
    let t = from;
    for (;;) {
      t += -Math.log(1 - rnd()) / rate;
      if (t >= to) break;
      out.push(Math.round(t * 1000));
    }
  }
  return out;
}
