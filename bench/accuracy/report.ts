/**
 * @module Aggregates scored runs into the accuracy table (per category and
 * format, plus all categories together): accuracy, invalid-call rate, calls
 * per task, latency; renders it as markdown and as a Vega-Lite bar chart.
 */
import type { TopLevelSpec } from "vega-lite";
import { mean, quantile } from "../lib/stats.js";
import type { ScoreErrorKind } from "./ast-scorer.js";
import type { FormatName } from "./run-task.js";

export interface ScoredRun {
  taskId: string;
  category: string;
  format: FormatName;
  valid: boolean;
  /** Why the calls were wrong (BFCL's error kind), when they were. */
  error?: ScoreErrorKind;
  errorMessage?: string;
  calls: number;
  invalidCalls: number | null;
  latencyMs: number;
  tokensGenerated: number;
  endReason: string;
}

export interface AccuracyRow {
  category: string;
  format: FormatName;
  tasks: number;
  accuracy: number;
  /** Rejected call blocks / all call blocks; null where the format cannot show rejected blocks. */
  invalid_call_rate: number | null;
  calls_per_task: number;
  latency_p50_ms: number;
  latency_p90_ms: number;
  tokens_per_task: number;
}

const r = (x: number, d = 0): number => Math.round(x * 10 ** d) / 10 ** d;

export function aggregateRuns(runs: readonly ScoredRun[], formats: readonly FormatName[]): AccuracyRow[] {
  const categories = [...new Set(runs.map((x) => x.category))];
  const rows: AccuracyRow[] = [];
  for (const category of [...categories, "all"]) {
    for (const format of formats) {
      const these = runs.filter((x) => x.format === format && (category === "all" || x.category === category));
      if (these.length === 0) continue;
      const blocks = these.reduce((n, x) => n + x.calls + (x.invalidCalls ?? 0), 0);
      const invalid = these.some((x) => x.invalidCalls === null) ? null : these.reduce((n, x) => n + (x.invalidCalls ?? 0), 0);
      rows.push({
        category,
        format,
        tasks: these.length,
        accuracy: r(these.filter((x) => x.valid).length / these.length, 3),
        invalid_call_rate: invalid === null ? null : blocks === 0 ? 0 : r(invalid / blocks, 3),
        calls_per_task: r(mean(these.map((x) => x.calls + (x.invalidCalls ?? 0))), 2),
        latency_p50_ms: r(quantile(these.map((x) => x.latencyMs), 0.5)),
        latency_p90_ms: r(quantile(these.map((x) => x.latencyMs), 0.9)),
        tokens_per_task: r(mean(these.map((x) => x.tokensGenerated)), 1),
      });
    }
  }
  return rows;
}

export const FORMAT_LABEL: Record<FormatName, string> = {
  cmlAsync: "CML async",
  cmlSync: "CML sync",
  openaiTools: "OpenAI tools (/v1/chat/completions)",
};

export function accuracyTable(rows: readonly AccuracyRow[]): string {
  const head =
    "| category | format | tasks | accuracy | invalid-call rate | calls/task | latency p50 ms | latency p90 ms | tokens/task |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |";
  const lines = rows.map(
    (x) =>
      `| ${x.category} | ${FORMAT_LABEL[x.format]} | ${x.tasks} | ${(x.accuracy * 100).toFixed(1)}% | ${x.invalid_call_rate === null ? "n/a" : `${(x.invalid_call_rate * 100).toFixed(1)}%`} | ${x.calls_per_task} | ${x.latency_p50_ms} | ${x.latency_p90_ms} | ${x.tokens_per_task} |`,
  );
  return [head, ...lines].join("\n");
}

/** Grouped bars: accuracy per category, one bar per format. */
export function accuracyChartSpec(rows: readonly AccuracyRow[], title: string): TopLevelSpec {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title,
    data: { values: rows.map((x) => ({ ...x, format: FORMAT_LABEL[x.format], label: `${(x.accuracy * 100).toFixed(0)}%` })) },
    width: 120,
    height: 220,
    facet: { column: { field: "category", type: "nominal", title: null } },
    spec: {
      encoding: { x: { field: "format", type: "nominal", title: null, axis: { labels: false, ticks: false } } },
      layer: [
        {
          mark: { type: "bar" },
          encoding: {
            y: { field: "accuracy", type: "quantitative", title: "BFCL AST accuracy", scale: { domain: [0, 1] }, axis: { format: "%" } },
            color: { field: "format", type: "nominal", title: null, legend: { orient: "bottom", labelLimit: 400 } },
          },
        },
        { mark: { type: "text", dy: -6 }, encoding: { y: { field: "accuracy", type: "quantitative" }, text: { field: "label" } } },
      ],
    },
  };
}
