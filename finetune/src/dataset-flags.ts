/**
 * @module The dataset flags shared by `npm run gen-finetune` and `npm run
 * finetune`, and the one-line summary of a dataset both print.
 */
import { GEMMA_PATH } from "../../hack/real-models.js";
import type { Split } from "../../bench/accuracy/split.js";
import { defaultBfclDir } from "../../bench/bfcl/load-tasks.js";
import { bfclSources, type DatasetOptions, type DatasetStats } from "./dataset.js";

/** Gemma 3 270M, as hack/tools/50-gemma.sh fetches it. */
export const DEFAULT_BASE_MODEL = (): string => GEMMA_PATH;

/** `cml` (default): CML samples; `native`: the same tasks in the model's own tool-call format (for the comparison row). */
export function parseFormatFlag(flags: Map<string, string>): "cml" | "native" {
  const format = flags.get("format") ?? "cml";
  if (format !== "cml" && format !== "native") throw new Error("--format must be cml or native");
  return format;
}

/** Parses the dataset flags shared by `gen-finetune` and `finetune`. */
export function parseDatasetFlags(flags: Map<string, string>): DatasetOptions {
  const list = (v: string | undefined): string[] => (v === undefined ? [] : v.split(",").map((s) => s.trim()).filter((s) => s !== ""));
  const questions = list(flags.get("questions"));
  const answers = list(flags.get("answers"));
  if (answers.length > 0 && answers.length !== questions.length) throw new Error("--answers must name one file per --questions file");
  const split = (flags.get("split") ?? "tuning") as Split;
  if (!["tuning", "eval", "all"].includes(split)) throw new Error("--split must be tuning, eval or all");
  const callStyle = flags.get("call-style") ?? "json";
  if (callStyle !== "json" && callStyle !== "python") throw new Error("--call-style must be json or python");
  const instructions = flags.get("instructions") ?? "brief";
  if (instructions !== "brief" && instructions !== "full") throw new Error("--instructions must be brief or full");
  const num = (name: string, def: number, min: number, max: number): number => {
    const v = Number(flags.get(name) ?? def);
    if (!Number.isFinite(v) || v < min || v > max) throw new Error(`--${name} must be a number in [${min}, ${max}]`);
    return v;
  };
  return {
    sources: questions.length > 0 ? questions.map((q, i) => ({ questions: q, ...(answers[i] !== undefined ? { answers: answers[i] } : {}) })) : bfclSources(defaultBfclDir()),
    split,
    seed: num("seed", 1, 0, 2 ** 31),
    variants: num("variants", 4, 0, 100),
    multiCallVariants: num("multi-call-variants", 10, 0, 100),
    fanOuts: num("fan-outs", 2, 0, 100),
    runs: num("runs", 1, 1, 100),
    syncShare: num("sync-share", 0.25, 0, 1),
    multistep: num("multistep", 20, 0, 10_000),
    synthetic: num("synthetic", 0, 0, 100_000),
    callStyle,
    instructions,
    maxTokens: num("max-tokens", 1536, 64, 1_000_000),
  };
}

/** The flags `parseDatasetFlags` and `parseFormatFlag` read. */
export const DATASET_FLAGS = ["format", "questions", "answers", "split", "call-style", "instructions", "seed", "variants", "multi-call-variants", "fan-outs", "runs", "sync-share", "multistep", "synthetic", "max-tokens"] as const;

/**
 * Refuses a flag the command does not read (a typo, `--help`): a run that
 * ignored it would still write its output, perhaps over an earlier one.
 */
export function refuseUnknownFlags(flags: ReadonlyMap<string, string>, known: readonly string[], usage: string): void {
  const unknown = [...flags.keys()].filter((f) => !known.includes(f));
  if (unknown.length > 0) throw new Error(`${unknown.map((f) => `--${f}`).join(", ")}: not a flag of this command\nusage: ${usage}`);
}

export function describeStats(stats: DatasetStats): string {
  const parts = [
    `${stats.samples} samples from ${stats.tasks} tasks (${Object.entries(stats.byOrigin).map(([k, v]) => `${k} ${v}`).join(", ")}; ${Object.entries(stats.byShape).map(([k, v]) => `${k} ${v}`).join(", ")})`,
    `${stats.sources.length} BFCL entries`,
    `${stats.interrupts} interrupts, ${stats.traps} traps, ${stats.retries} retried calls`,
  ];
  if (stats.tokens !== undefined) parts.push(`tokens per sample mean ${stats.tokens.mean}, max ${stats.tokens.max}, ${stats.tokens.lossMean} in the loss; ${stats.tooLong} left out as too long`);
  return parts.join("; ");
}
