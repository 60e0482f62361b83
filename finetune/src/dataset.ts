/**
 * @module The fine-tuning dataset: which BFCL entries become training tasks,
 * how many samples each gives, and the checks every sample passes before it
 * is written. Only the tuning split is used (bench/accuracy/split.ts), so no
 * task the accuracy bench evaluates, nor a variant of one, is ever trained on.
 * - every single-turn entry (any category file with its possible answer):
 *   its own messages and tools, and its ground-truth calls, independent;
 * - its argument variants (the same request with other values; more of them
 *   for tasks of several calls), and for one-call tasks fan-out variants (the
 *   same request about two or three values, one call each);
 * - multi-step tasks: three first turns of multi-turn entries, each a chain,
 *   with the tools their calls use;
 * - with `synthetic`, that many tasks on functions no BFCL entry has
 *   (synthetic-tasks.ts);
 * - each task simulated in async shape, or, for a share, in sync shape.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { ChatMessage } from "../../common/src/index.js";
import type { CallStyle, PromptInstructions } from "../../engine-pod/src/prompt/index.js";
import { inSplit, type Split } from "../../bench/accuracy/split.js";
import type { BfclEntry, SingleTurnEntry } from "../../bench/bfcl/bfcl-reader.js";
import { buildTasks, readEntries } from "../../bench/bfcl/load-tasks.js";
import { mulberry32 } from "../../bench/bfcl/seeded-random.js";
import { argumentVariant, fanOutVariant } from "./argument-variants.js";
import { syntheticTasks } from "./synthetic-tasks.js";
import { buildSample, type FinetuneSample, type TrainingTask } from "./build-samples.js";
import { NativeSampleTokenizer, type NativeSample } from "./native-samples.js";
import type { SampleTokenizer, TokenizedSample } from "./sample-tokens.js";
import { validateSample } from "./validate.js";

export interface DatasetOptions {
  /** Question files (each with its possible answer beside it, or in `answers`). */
  sources: { questions: string; answers?: string }[];
  split: Split;
  seed: number;
  /** Argument variants per single-turn task (besides the task itself). */
  variants: number;
  /** Argument variants per task of several calls (BFCL's parallel pattern is the hardest for a small model). */
  multiCallVariants: number;
  /** Fan-out variants per one-call task (the same request about two or three values: one call each). */
  fanOuts: number;
  /** Simulated runs per task. */
  runs: number;
  /** Share of samples in sync shape (each result right after its call). */
  syncShare: number;
  /** Multi-step tasks (three chains each) at most. */
  multistep: number;
  /** Synthetic tasks (synthetic-tasks.ts: functions no BFCL entry has) added to the BFCL ones. */
  synthetic: number;
  callStyle: CallStyle;
  /** How much of CML the samples' system prompt explains (the adapter tells the engine to prompt the same way). */
  instructions: PromptInstructions;
  /** Samples longer than this many tokens are left out (training time grows with length). */
  maxTokens: number;
}

export type DatasetSample = FinetuneSample & { tokens?: TokenizedSample };

export interface DatasetStats {
  samples: number;
  byOrigin: Record<string, number>;
  byShape: Record<string, number>;
  tasks: number;
  sources: string[];
  interrupts: number;
  traps: number;
  retries: number;
  tooLong: number;
  tokens?: { mean: number; max: number; lossMean: number };
}

/** Every BFCL category file in `dir` that has a possible-answer file (single-turn ones and multi-turn ones). */
export function bfclSources(dir: string): { questions: string }[] {
  if (!existsSync(dir)) throw new Error(`BFCL folder not found: ${dir} (set BFCL_DIR or pass --questions FILE)`);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json") && existsSync(join(dir, "possible_answer", f)))
    .sort()
    .map((f) => ({ questions: join(dir, f) }));
}

function singleTurnTask(entry: SingleTurnEntry): TrainingTask {
  const seen = new Set<string>();
  return {
    id: entry.id,
    origin: "bfcl",
    sources: [entry.id],
    messages: entry.messages.filter((m): m is ChatMessage => m.role === "system" || m.role === "user"),
    tools: entry.tools.filter((t) => !seen.has(t.name) && seen.add(t.name)),
    calls: entry.calls.map((c, i) => ({ id: `c${i}`, tool: c.tool, arguments: c.arguments, dependsOn: [] })),
  };
}

/** The training tasks of `entries` (already in the split): single-turn tasks with their variants, then multi-step tasks. */
export function trainingTasks(entries: readonly BfclEntry[], o: Pick<DatasetOptions, "seed" | "variants" | "multiCallVariants" | "fanOuts" | "multistep"> & Partial<Pick<DatasetOptions, "synthetic">>): TrainingTask[] {
  const rng = mulberry32(o.seed * 31 + 7);
  const tasks: TrainingTask[] = [];
  for (const entry of entries) {
    if (entry.kind !== "single" || entry.calls.length === 0) continue;
    const task = singleTurnTask(entry);
    tasks.push(task);
    const variants = task.calls.length > 1 ? o.multiCallVariants : o.variants;
    for (let v = 1; v <= variants; v++) {
      const variant = argumentVariant(task, rng, v);
      if (variant === undefined) break; // nothing in this task can vary
      tasks.push(variant);
    }
    for (let f = 1; f <= o.fanOuts; f++) {
      const fan = fanOutVariant(task, rng, f);
      if (fan === undefined) break;
      tasks.push(fan);
    }
  }
  const multi = buildTasks([...entries], "multistep", { seed: o.seed, toolDocs: "called", maxTasks: o.multistep });
  for (const t of multi) tasks.push({ id: t.id, origin: "multistep", sources: t.sources, messages: [{ role: "user", content: t.prompt }], tools: t.tools, calls: t.calls });
  tasks.push(...syntheticTasks(o.synthetic ?? 0, o.seed));
  return tasks;
}

/** Builds, validates and (with a tokenizer) tokenizes every sample; a sample that fails validation stops the run. */
export function buildDataset(o: DatasetOptions, tokenizer?: SampleTokenizer): { samples: DatasetSample[]; stats: DatasetStats } {
  const entries = o.sources.flatMap((s) => readEntries(s)).filter((e) => inSplit(e.id, o.split));
  const tasks = trainingTasks(entries, o);
  if (tasks.length === 0) throw new Error(`no tasks in the ${o.split} split of the given files`);
  const rng = mulberry32(o.seed);
  const countTokens = tokenizer?.countTokens ?? ((text: string) => Math.ceil(text.length / 4));
  const samples: DatasetSample[] = [];
  const stats: DatasetStats = { samples: 0, byOrigin: {}, byShape: {}, tasks: tasks.length, sources: [...new Set(entries.map((e) => e.id))], interrupts: 0, traps: 0, retries: 0, tooLong: 0 };
  for (const task of tasks) {
    for (let r = 0; r < o.runs; r++) {
      const shape = rng() < o.syncShare ? "sync" : "async";
      const sample: DatasetSample = buildSample(task, { rng, countTokens, callStyle: o.callStyle, shape, instructions: o.instructions });
      const problems = validateSample(sample);
      if (problems.length > 0) throw new Error(`sample ${task.id}#${r} failed validation: ${problems.join("; ")}`);
      if (tokenizer !== undefined) {
        sample.tokens = tokenizer.tokenize(sample);
        if (sample.tokens.input_ids.length > o.maxTokens) {
          stats.tooLong++;
          continue;
        }
      }
      samples.push(sample);
      stats.byOrigin[task.origin] = (stats.byOrigin[task.origin] ?? 0) + 1;
      stats.byShape[shape] = (stats.byShape[shape] ?? 0) + 1;
      stats.interrupts += sample.segments.filter((s) => s.kind === "interrupt").length;
      stats.traps += sample.segments.filter((s) => s.kind === "trap").length;
      stats.retries += sample.dag.filter((c) => c.retryOf !== undefined).length;
    }
  }
  stats.samples = samples.length;
  if (tokenizer !== undefined && samples.length > 0) {
    stats.tokens = tokenStats(samples.map((s) => s.tokens!));
  }
  return { samples, stats };
}

/**
 * The same tasks in the model's own tool-call format (native-samples.ts), for
 * a fine-tune compared with the CML one on the same tasks; samples whose
 * renderings give no exact loss spans are left out and counted.
 */
export function buildNativeDataset(o: DatasetOptions, tokenizer: SampleTokenizer): { samples: NativeSample[]; stats: DatasetStats } {
  const entries = o.sources.flatMap((s) => readEntries(s)).filter((e) => inSplit(e.id, o.split));
  const tasks = trainingTasks(entries, o);
  const native = new NativeSampleTokenizer(tokenizer.model);
  const rng = mulberry32(o.seed);
  const samples: NativeSample[] = [];
  const stats: DatasetStats = { samples: 0, byOrigin: {}, byShape: {}, tasks: tasks.length, sources: [...new Set(entries.map((e) => e.id))], interrupts: 0, traps: 0, retries: 0, tooLong: 0 };
  let unrendered = 0;
  for (const task of tasks) {
    for (let r = 0; r < o.runs; r++) {
      const sample = native.sample(task, rng);
      if (sample === undefined) {
        unrendered++;
        continue;
      }
      if (sample.tokens.input_ids.length > o.maxTokens) {
        stats.tooLong++;
        continue;
      }
      samples.push(sample);
      stats.byOrigin[task.origin] = (stats.byOrigin[task.origin] ?? 0) + 1;
      stats.byShape[`native (${native.wrapperName})`] = (stats.byShape[`native (${native.wrapperName})`] ?? 0) + 1;
    }
  }
  if (unrendered > 0) stats.byShape["left out: no exact loss spans"] = unrendered;
  stats.samples = samples.length;
  if (samples.length > 0) {
    stats.tokens = tokenStats(samples.map((s) => s.tokens));
  }
  return { samples, stats };
}

/** Mean and longest sample, and the mean tokens in the loss, of a non-empty set of tokenized samples. */
function tokenStats(tokenized: readonly TokenizedSample[]): NonNullable<DatasetStats["tokens"]> {
  const lengths = tokenized.map((t) => t.input_ids.length);
  const loss = tokenized.map((t) => t.loss_spans.reduce((n, [a, b]) => n + b - a, 0));
  return { mean: Math.round(lengths.reduce((a, b) => a + b, 0) / lengths.length), max: Math.max(...lengths), lossMean: Math.round(loss.reduce((a, b) => a + b, 0) / loss.length) };
}

/** JSON Lines of the samples, and their SHA-256 (the data's identity in an adapter's provenance). */
export function serializeDataset(samples: readonly (DatasetSample | NativeSample)[]): { text: string; sha256: string } {
  const text = samples.map((s) => JSON.stringify(s)).join("\n") + "\n";
  return { text, sha256: createHash("sha256").update(text).digest("hex") };
}
