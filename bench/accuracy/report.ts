/**
 * @module Aggregates scored runs into the accuracy table, per category (and
 * all categories together), model (base or fine-tuned) and format: accuracy
 * with its 95% Wilson interval, the invalid-call rate with the call grammar
 * on and off, the share of turns that ended by themselves (EOS) rather than
 * at the token budget, calls and tokens per task, latency, and the failures
 * grouped by cause. Renders markdown tables and a Vega-Lite bar chart.
 */
import type { TopLevelSpec } from "vega-lite";
import { mean, quantile, wilsonInterval } from "../lib/stats.js";
import type { ScoreErrorKind } from "./ast-scorer.js";
import type { FormatName } from "./run-task.js";

export type ModelName = "base" | "finetuned";

/** Why a task's calls were wrong, in the terms. */
export type FailureCause = "wrong_tool" | "wrong_argument" | "missing_call" | "extra_call" | "harness_error";
export const FAILURE_CAUSES: readonly FailureCause[] = ["wrong_tool", "wrong_argument", "missing_call", "extra_call", "harness_error"];

export interface ScoredRun {
  taskId: string;
  category: string;
  model: ModelName;
  format: FormatName;
  /** The call grammar constrained call blocks. */
  grammar: boolean;
  valid: boolean;
  /** BFCL's error kind, when the calls were wrong. */
  error?: ScoreErrorKind | "harness_error";
  errorMessage?: string;
  cause?: FailureCause;
  calls: number;
  expectedCalls: number;
  invalidCalls: number | null;
  latencyMs: number;
  tokensGenerated: number;
  eos: boolean;
  endReason: string;
}

/** Groups a failed run by cause: the scorer's kind, and for a count mismatch whether calls were missing or extra. */
export function failureCause(run: Pick<ScoredRun, "error" | "calls" | "expectedCalls">): FailureCause {
  switch (run.error) {
    case "harness_error":
      return "harness_error";
    case "wrong_count":
      return run.calls < run.expectedCalls ? "missing_call" : "extra_call";
    case "wrong_function":
      return "wrong_tool";
    case "missing_required":
    case "unexpected_parameter":
    case "type_error":
    case "value_error":
    case "missing_optional":
    case undefined:
      return "wrong_argument";
  }
  return "wrong_argument";
}

export interface AccuracyRow {
  category: string;
  model: ModelName;
  format: FormatName;
  tasks: number;
  accuracy: number;
  accuracy_ci95: [number, number];
  /** Rejected call blocks / all call blocks, grammar on; null where the format cannot show rejected blocks. */
  invalid_call_rate: number | null;
  /** The same with the call grammar off (null where not measured). */
  invalid_call_rate_no_grammar: number | null;
  eos_rate: number;
  calls_per_task: number;
  tokens_per_task: number;
  latency_p50_ms: number;
  latency_p90_ms: number;
  failures: Record<FailureCause, number>;
  /** Failed tasks whose turn ran to the token budget. */
  failures_never_stopped: number;
}

const r = (x: number, d = 0): number => Math.round(x * 10 ** d) / 10 ** d;

function invalidRate(runs: readonly ScoredRun[]): number | null {
  if (runs.length === 0 || runs.some((x) => x.invalidCalls === null)) return null;
  const blocks = runs.reduce((n, x) => n + x.calls + (x.invalidCalls ?? 0), 0);
  const invalid = runs.reduce((n, x) => n + (x.invalidCalls ?? 0), 0);
  return blocks === 0 ? 0 : r(invalid / blocks, 3);
}

/** One row per category (then `all`), model and format; grammar-off runs only feed `invalid_call_rate_no_grammar`. */
export function aggregateRuns(runs: readonly ScoredRun[], formats: readonly FormatName[]): AccuracyRow[] {
  const categories = [...new Set(runs.map((x) => x.category))];
  const models = (["base", "finetuned"] as const).filter((m) => runs.some((x) => x.model === m));
  const rows: AccuracyRow[] = [];
  for (const category of [...categories, "all"]) {
    for (const model of models) {
      for (const format of formats) {
        const all = runs.filter((x) => x.model === model && x.format === format && (category === "all" || x.category === category));
        const these = all.filter((x) => x.grammar);
        if (these.length === 0) continue;
        const right = these.filter((x) => x.valid).length;
        const failed = these.filter((x) => !x.valid);
        const noGrammar = all.filter((x) => !x.grammar);
        // The native format runs without a call grammar: its invalid-call rate is a grammar-off one.
        const unconstrained = format === "native";
        rows.push({
          category,
          model,
          format,
          tasks: these.length,
          accuracy: r(right / these.length, 3),
          accuracy_ci95: wilsonInterval(right, these.length).map((v) => r(v, 3)) as [number, number],
          invalid_call_rate: unconstrained ? null : invalidRate(these),
          invalid_call_rate_no_grammar: unconstrained ? invalidRate(these) : noGrammar.length > 0 ? invalidRate(noGrammar) : null,
          eos_rate: r(these.filter((x) => x.eos).length / these.length, 3),
          calls_per_task: r(mean(these.map((x) => x.calls + (x.invalidCalls ?? 0))), 2),
          tokens_per_task: r(mean(these.map((x) => x.tokensGenerated)), 1),
          latency_p50_ms: r(quantile(these.map((x) => x.latencyMs), 0.5)),
          latency_p90_ms: r(quantile(these.map((x) => x.latencyMs), 0.9)),
          failures: Object.fromEntries(FAILURE_CAUSES.map((c) => [c, failed.filter((x) => x.cause === c).length])) as Record<FailureCause, number>,
          failures_never_stopped: failed.filter((x) => !x.eos).length,
        });
      }
    }
  }
  return rows;
}

export const FORMAT_LABEL: Record<FormatName, string> = {
  cmlAsync: "CML async",
  cmlSync: "CML sync",
  openaiTools: "OpenAI tools (CML underneath)",
  native: "native tool calls (node-llama-cpp)",
};

const pct = (x: number | null): string => (x === null ? "n/a" : `${(x * 100).toFixed(1)}%`);

export function accuracyTable(rows: readonly AccuracyRow[]): string {
  const head =
    "| category | model | format | tasks | accuracy (95% CI) | invalid calls, grammar on / off | EOS rate | calls/task | tokens/task | latency p50 ms | p90 ms |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |";
  const lines = rows.map(
    (x) =>
      `| ${x.category} | ${x.model} | ${FORMAT_LABEL[x.format]} | ${x.tasks} | ${pct(x.accuracy)} (${pct(x.accuracy_ci95[0])}–${pct(x.accuracy_ci95[1])}) | ${pct(x.invalid_call_rate)} / ${pct(x.invalid_call_rate_no_grammar)} | ${pct(x.eos_rate)} | ${x.calls_per_task} | ${x.tokens_per_task} | ${x.latency_p50_ms} | ${x.latency_p90_ms} |`,
  );
  return [head, ...lines].join("\n");
}

/** Failed tasks by cause, per category, model and format. */
export function failureTable(rows: readonly AccuracyRow[]): string {
  const head = `| category | model | format | failed | ${FAILURE_CAUSES.map((c) => c.replace("_", " ")).join(" | ")} | of which never stopped |\n| --- | --- | --- | --- | ${FAILURE_CAUSES.map(() => "---").join(" | ")} | --- |`;
  const lines = rows.map((x) => {
    const failed = FAILURE_CAUSES.reduce((n, c) => n + x.failures[c], 0);
    return `| ${x.category} | ${x.model} | ${FORMAT_LABEL[x.format]} | ${failed} | ${FAILURE_CAUSES.map((c) => x.failures[c]).join(" | ")} | ${x.failures_never_stopped} |`;
  });
  return [head, ...lines].join("\n");
}

/** Grouped bars: accuracy per category, one bar per model and format, with the 95% interval. */
export function accuracyChartSpec(rows: readonly AccuracyRow[], title: string): TopLevelSpec {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title,
    data: { values: rows.map((x) => ({ ...x, series: `${x.model}, ${FORMAT_LABEL[x.format]}`, lo: x.accuracy_ci95[0], hi: x.accuracy_ci95[1], label: `${(x.accuracy * 100).toFixed(0)}%` })) },
    width: 160,
    height: 220,
    facet: { column: { field: "category", type: "nominal", title: null } },
    spec: {
      encoding: { x: { field: "series", type: "nominal", title: null, axis: { labels: false, ticks: false } } },
      layer: [
        {
          mark: { type: "bar" },
          encoding: {
            y: { field: "accuracy", type: "quantitative", title: "BFCL AST accuracy", scale: { domain: [0, 1] }, axis: { format: "%" } },
            color: { field: "series", type: "nominal", title: null, legend: { orient: "bottom", labelLimit: 400 } },
          },
        },
        { mark: { type: "rule" }, encoding: { y: { field: "lo", type: "quantitative" }, y2: { field: "hi" } } },
        { mark: { type: "text", dy: -6 }, encoding: { y: { field: "hi", type: "quantitative" }, text: { field: "label" } } },
      ],
    },
  };
}
