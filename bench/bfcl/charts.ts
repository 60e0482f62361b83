/**
 * @module Benchmark charts as SVG, declared in Vega-Lite and rendered
 * headless by Vega: latency bars per mode with p10–p90 whiskers (AsyncLM
 * Figures 5 and 6), and the E/G sweep against the paper's 1 + E/G curve.
 */
import type { TopLevelSpec } from "vega-lite";
import { renderSvg } from "../lib/output.js";

export interface LatencyBar {
  workload: string;
  mode: string;
  p50_ms: number;
  p10_ms: number;
  p90_ms: number;
  speedup_vs_sync: number;
}

export interface SweepPoint {
  scale: number;
  e_over_g: number;
  speedup_measured: number;
  speedup_predicted: number;
  /** The exact Appendix A speedup for the same tasks (finite number of calls). */
  speedup_analytic: number;
}


export function latencyChartSpec(bars: LatencyBar[], modeOrder: string[]): TopLevelSpec {
  const data = bars.map((b) => ({ ...b, label: `${b.speedup_vs_sync.toFixed(2)}x` }));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "End-to-end task latency by mode (bars: median; whiskers: p10–p90; labels: speedup over sync)",
    data: { values: data },
    facet: { column: { field: "workload", type: "nominal", title: null, sort: ["parallel", "multistep", "interrupts"] } },
    resolve: { scale: { y: "independent" } },
    spec: {
      width: 260,
      height: 240,
      encoding: { x: { field: "mode", type: "nominal", sort: modeOrder, title: null, axis: { labelAngle: -30 } } },
      layer: [
        {
          mark: { type: "bar" },
          encoding: {
            y: { field: "p50_ms", type: "quantitative", title: "latency (ms)" },
            color: { field: "mode", type: "nominal", sort: modeOrder, legend: null },
          },
        },
        { mark: { type: "rule" }, encoding: { y: { field: "p10_ms", type: "quantitative" }, y2: { field: "p90_ms" } } },
        { mark: { type: "text", dy: -8 }, encoding: { y: { field: "p90_ms", type: "quantitative" }, text: { field: "label" } } },
      ],
    },
  };
}

export function sweepChartSpec(points: SweepPoint[]): TopLevelSpec {
  const values = points.flatMap((p) => [
    { e_over_g: p.e_over_g, speedup: p.speedup_measured, series: "measured async vs sync" },
    { e_over_g: p.e_over_g, speedup: p.speedup_predicted, series: "1 + E/G (AsyncLM Thm 6.2)" },
    { e_over_g: p.e_over_g, speedup: p.speedup_analytic, series: "exact analytic, these tasks (App. A)" },
  ]);
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "Speedup over sync against E/G (tool-latency sweep)",
    width: 420,
    height: 280,
    data: { values },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "e_over_g", type: "quantitative", title: "E/G (mean tool time / mean call generation time)" },
      y: { field: "speedup", type: "quantitative", title: "speedup over sync" },
      color: { field: "series", type: "nominal", title: null, legend: { orient: "bottom", labelLimit: 400 } },
      strokeDash: { field: "series", type: "nominal" },
    },
  };
}

export function renderLatencyChart(bars: LatencyBar[], modeOrder: string[]): Promise<string> {
  return renderSvg(latencyChartSpec(bars, modeOrder));
}

export function renderSweepChart(points: SweepPoint[]): Promise<string> {
  return renderSvg(sweepChartSpec(points));
}
