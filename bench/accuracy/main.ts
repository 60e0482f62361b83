/**
 * @module `npm run bench -- accuracy [--quick] [--model GGUF] [--adapter GGUF[@SCALE][,GGUF[@SCALE]...]]
 * [--native-adapter GGUF] [--questions FILE[,FILE..] --answers FILE[,FILE..]]
 * [--tasks N] [--seed N] [--split eval|tuning|all]
 * [--formats cmlAsync,cmlSync,openaiTools,native]
 * [--grammar-off cmlAsync,...|none] [--models base,finetuned]
 * [--max-tokens N] [--threads N] [--json FILE] [--out DIR]`
 *
 * AsyncLM §6.5's question on a real model: does asynchronous calling cost
 * correctness, and what does fine-tuning on CML (§3.3) buy? BFCL single-turn
 * tasks (any category file with its possible answer) run UNSCRIPTED on one
 * engine: the model decides every call. The same tasks, seed and model run
 * as a CML async session and a CML sync session (and, when asked, an
 * OpenAI-tools chat completion, and the model's own tool-call format, not
 * CML: `native`), first on the base model and then, with `--adapter`, on the
 * base model wearing the LoRA adapter, or several at once, each at its scale
 * as the engine's `--adapters` takes them (seven at @0.142857 are their
 * exact soup) (for `native`, `--native-adapter`: the
 * same tasks fine-tuned in that format); each task's calls
 * are scored with BFCL's AST rules. Formats listed in `--grammar-off` run a
 * second time with the call grammar off, for the invalid-call rate without
 * it. Tools answer a neutral `{"status": "ok"}` after a seeded latency
 * (BFCL's AST categories never execute the calls either, and a neutral
 * answer tells the model nothing about whether it was right). A task that
 * fails in the harness is recorded as such and the run goes on.
 *
 * Default model: Gemma 3 270M (hack/tools/50-gemma.sh). Upper bound: 100%.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger, parseArgv, type ChatMessage, type Logger, type ToolSpec } from "../../common/src/index.js";
import { createReplayTool, type BuiltinTool } from "../../common/src/builtin-tools/index.js";
import { createEngine, type Engine } from "../../engine-pod/src/engine/index.js";
import { parseAdapterList, type AdapterOption } from "../../engine-pod/src/engine/engine-options.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { EngineMetrics } from "../../engine-pod/src/metrics/index.js";
import { GEMMA_PATH } from "../../hack/real-models.js";
import { DEFAULT_SERVER_LIMITS, EngineServer } from "../../engine-pod/src/server/index.js";
import { renderSvg } from "../lib/output.js";
import type { SingleTurnEntry } from "../bfcl/bfcl-reader.js";
import { defaultBfclDir, readEntries } from "../bfcl/load-tasks.js";
import { drawLatencyMs, mulberry32, shuffled } from "../bfcl/seeded-random.js";
import { scoreCalls } from "./ast-scorer.js";
import { accuracyChartSpec, accuracyTable, aggregateRuns, failureCause, failureTable, type AccuracyRow, type ModelName, type ScoredRun } from "./report.js";
import { NativeToolCaller } from "./native-format.js";
import { FORMATS, runFormat, type AccuracyTask, type FormatName } from "./run-task.js";
import { inSplit, type Split } from "./split.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The neutral tool answer: the same for right and wrong calls. */
const TOOL_OUTPUT = '{"status": "ok"}';
const r2 = (x: number): number => Math.round(x * 100) / 100;

interface Config {
  model: string;
  /** The fine-tuned model: the base model with these LoRA adapters (usually one, at scale 1). */
  adapters?: AdapterOption[];
  /** The fine-tuned model in the native format: the base model with this adapter (trained with `--format native`). */
  nativeAdapter?: string;
  models: ModelName[];
  /** Formats run a second time with the call grammar off. */
  grammarOff: FormatName[];
  sources: { questions: string; answers?: string; category: string }[];
  tasksPerCategory: number;
  seed: number;
  split: Split;
  formats: FormatName[];
  maxTokens: number;
  contextSize: number;
  threads: number;
  quick: boolean;
  json?: string;
  outDir: string;
}

/** `BFCL_v4_simple_python.json` → `simple_python`. */
export function categoryOf(path: string): string {
  return basename(path).replace(/\.jsonl?$/, "").replace(/^BFCL_v\d+_/, "");
}

function parseConfig(argv: string[]): Config {
  const flags = parseArgv(argv);
  const quick = flags.has("quick");
  const list = (v: string | undefined): string[] => (v === undefined ? [] : v.split(",").map((s) => s.trim()).filter((s) => s !== ""));
  const questions = list(flags.get("questions"));
  const answers = list(flags.get("answers"));
  if (answers.length > 0 && answers.length !== questions.length) throw new Error("--answers must name one file per --questions file");
  let sources: Config["sources"];
  if (questions.length > 0) sources = questions.map((q, i) => ({ questions: q, ...(answers[i] !== undefined ? { answers: answers[i] } : {}), category: categoryOf(q) }));
  else {
    const dir = defaultBfclDir();
    if (!existsSync(dir)) throw new Error(`BFCL folder not found: ${dir} (set BFCL_DIR or pass --questions FILE --answers FILE)`);
    // Every single-turn category present with its possible answer (multi-turn files have no AST answers).
    sources = readdirSync(dir)
      .filter((f) => f.endsWith(".json") && !/multi_turn/.test(f) && existsSync(join(dir, "possible_answer", f)))
      .sort()
      .map((f) => ({ questions: join(dir, f), category: categoryOf(f) }));
  }
  const formats = list(flags.get("formats"));
  for (const f of formats) if (!(FORMATS as readonly string[]).includes(f)) throw new Error(`--formats: unknown format ${f} (${FORMATS.join(", ")})`);
  const grammarOff = flags.get("grammar-off") === "none" ? [] : list(flags.get("grammar-off") ?? "cmlAsync");
  for (const f of grammarOff) if (f !== "cmlAsync" && f !== "cmlSync") throw new Error(`--grammar-off: ${f} is not a CML format (cmlAsync, cmlSync) or none`);
  const adapterFlag = flags.get("adapter");
  const adapters = adapterFlag !== undefined ? parseAdapterList(adapterFlag, "adapter") : undefined;
  for (const a of adapters ?? []) if (!existsSync(a.path)) throw new Error(`--adapter ${a.path}: no such file (npm run finetune writes one)`);
  const adapter = adapters !== undefined && adapters.length > 0 ? adapters : undefined;
  const nativeAdapter = flags.get("native-adapter");
  if (nativeAdapter !== undefined && !existsSync(nativeAdapter)) throw new Error(`--native-adapter ${nativeAdapter}: no such file (npm run finetune -- --format native writes one)`);
  const models = list(flags.get("models") ?? (adapter !== undefined || nativeAdapter !== undefined ? "base,finetuned" : "base"));
  for (const m of models) if (m !== "base" && m !== "finetuned") throw new Error(`--models: unknown model ${m} (base, finetuned)`);
  const chosen = formats.length > 0 ? formats : ["cmlAsync", "cmlSync"];
  if (models.includes("finetuned") && adapter === undefined && chosen.some((f) => f !== "native")) throw new Error("--models finetuned needs --adapter PATH (the CML fine-tune) for the CML and OpenAI formats");
  if (models.includes("finetuned") && nativeAdapter === undefined && chosen.includes("native")) throw new Error("--models finetuned with --formats native needs --native-adapter PATH (a fine-tune in the native format)");
  const split = flags.get("split") ?? "eval";
  if (split !== "eval" && split !== "tuning" && split !== "all") throw new Error("--split must be eval, tuning or all");
  const int = (name: string, def: number): number => {
    const v = Number(flags.get(name) ?? def);
    if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer`);
    return v;
  };
  return {
    model: flags.get("model") ?? GEMMA_PATH,
    ...(adapter !== undefined ? { adapters: adapter } : {}),
    ...(nativeAdapter !== undefined ? { nativeAdapter } : {}),
    models: models as ModelName[],
    grammarOff: grammarOff as FormatName[],
    sources,
    tasksPerCategory: int("tasks", quick ? 2 : 25),
    seed: int("seed", 1),
    split,
    formats: chosen as FormatName[],
    maxTokens: int("max-tokens", quick ? 96 : 192),
    contextSize: int("context-size", 4096),
    threads: int("threads", 2),
    quick,
    ...(flags.get("json") !== undefined ? { json: flags.get("json")! } : {}),
    outDir: flags.get("out") ?? join(ROOT, "bench/results"),
  };
}

/** Picks each category's tasks (seeded, in the requested split) and gives every tool a seeded latency hint. */
export function pickTasks(entries: readonly SingleTurnEntry[], category: string, n: number, seed: number, split: Split): (AccuracyTask & { entry: SingleTurnEntry })[] {
  const eligible = entries.filter((e) => inSplit(e.id, split) && e.possible.length > 0);
  const rng = mulberry32(seed);
  return shuffled(eligible, rng)
    .slice(0, n)
    .map((entry) => ({
      id: entry.id,
      category,
      entry,
      messages: entry.messages.filter((m): m is ChatMessage => m.role === "system" || m.role === "user" || m.role === "assistant"),
      tools: entry.tools.map((t) => ({ ...t, estimatedLatencyMs: drawLatencyMs(rng) })),
    }));
}

/** An engine pod in this process: the real engine and HTTP server, tools run by the in-process executor as replay builtins. */
/** How a run's adapters are named in its output: the file, and its scale where not 1. */
function adapterLabel(adapters: readonly AdapterOption[]): string {
  return adapters.map((a) => `${basename(a.path)}${a.scale !== 1 ? `@${a.scale}` : ""}`).join(",");
}

async function startPod(config: Config, adapters: readonly AdapterOption[] | undefined, tools: Map<string, BuiltinTool>, log: Logger): Promise<{ url: string; engine: Engine; close(): Promise<void> }> {
  const executor = new InProcessExecutor({ tools, log });
  const engine = await createEngine(
    {
      modelPath: config.model,
      ...(adapters !== undefined ? { adapters: [...adapters] } : {}),
      gpu: false,
      sequences: 3,
      contextSize: config.contextSize,
      threads: config.threads,
      kvPolicy: "auto",
      maxTokens: config.maxTokens,
      prefixCache: true,
    },
    executor,
    log,
    { calibrate: false },
  );
  const server = new EngineServer({ catalog: { builtins: new Map(), pools: false, defaultPool: "bench/accuracy" }, limits: DEFAULT_SERVER_LIMITS, metrics: new EngineMetrics(), log, engine });
  const port = await server.listen(0, "127.0.0.1");
  return {
    url: `http://127.0.0.1:${port}`,
    engine,
    async close() {
      await server.close();
      await engine.close();
      await executor.close();
    },
  };
}

/** Registers the task's functions as replay tools that answer {@link TOOL_OUTPUT} after their latency. */
function registerTools(tools: Map<string, BuiltinTool>, specs: readonly ToolSpec[]): void {
  tools.clear();
  for (const spec of specs) tools.set(spec.name, createReplayTool({ spec, table: new Map(), fallback: { output: TOOL_OUTPUT, latencyMs: spec.estimatedLatencyMs ?? 100 } }));
}

/** What runs one model's formats: an engine pod for the CML and OpenAI formats, node-llama-cpp's chat session for `native`. */
interface Runners {
  pod?: { url: string; close(): Promise<void> };
  native?: NativeToolCaller;
}

/** One task in one format on one model: scored, or recorded as a harness error; never throws. */
async function attempt(task: AccuracyTask & { entry: SingleTurnEntry }, model: ModelName, format: FormatName, grammar: boolean, runners: Runners, config: Config): Promise<ScoredRun> {
  const base = { taskId: task.id, category: task.category, model, format, grammar, expectedCalls: task.entry.possible.length };
  try {
    const out =
      format === "native"
        ? await runners.native!.run(task, { maxTokens: config.maxTokens, seed: config.seed, toolOutput: TOOL_OUTPUT })
        : await runFormat(task, format, { engineUrl: runners.pod!.url, maxTokens: config.maxTokens, seed: config.seed, grammar });
    const score = scoreCalls(task.tools, out.calls, task.entry.possible);
    const run: ScoredRun = {
      ...base,
      valid: score.valid,
      ...(score.valid ? {} : { error: score.kind, errorMessage: score.message }),
      calls: out.calls.length,
      invalidCalls: out.invalidCalls,
      latencyMs: Math.round(out.latencyMs),
      tokensGenerated: out.tokensGenerated,
      eos: out.eos,
      endReason: out.endReason,
    };
    return score.valid ? run : { ...run, cause: failureCause(run) };
  } catch (err) {
    return { ...base, valid: false, error: "harness_error", errorMessage: (err as Error).message, cause: "harness_error", calls: 0, invalidCalls: null, latencyMs: 0, tokensGenerated: 0, eos: false, endReason: "error" };
  }
}

/** The issue's targets for a fine-tuned model, checked against the rows. */
function targetLines(rows: readonly AccuracyRow[]): string[] {
  const get = (category: string, format: FormatName): AccuracyRow | undefined => rows.find((x) => x.model === "finetuned" && x.category === category && x.format === format);
  const lines: string[] = [];
  for (const [category, floor] of [["simple_python", 0.5], ["multiple", 0.5], ["parallel", 0.3]] as const) {
    for (const format of ["cmlAsync", "cmlSync"] as const) {
      const row = get(category, format);
      if (row !== undefined) lines.push(`${row.accuracy >= floor ? "met   " : "missed"} ${category} ${format}: ${(row.accuracy * 100).toFixed(1)}% (target ≥ ${floor * 100}%)`);
    }
  }
  for (const row of rows.filter((x) => x.model === "finetuned" && x.format === "cmlAsync")) {
    const sync = get(row.category, "cmlSync");
    if (sync !== undefined) {
      const gap = (sync.accuracy - row.accuracy) * 100;
      lines.push(`${gap <= 3 ? "met   " : "missed"} ${row.category}: async ${(row.accuracy * 100).toFixed(1)}% vs sync ${(sync.accuracy * 100).toFixed(1)}% (async at most 3 points below)`);
    }
  }
  const all = get("all", "cmlAsync");
  if (all !== undefined) lines.push(`${all.eos_rate >= 0.9 ? "met   " : "missed"} async sessions ending by EOS: ${(all.eos_rate * 100).toFixed(1)}% (target ≥ 90%)`);
  return lines;
}

export async function run(argv: string[]): Promise<void> {
  const config = parseConfig(argv);
  if (!existsSync(config.model)) {
    throw new Error(`model not found: ${config.model} (run \`bash hack/tools/50-gemma.sh\` for Gemma 3 270M, or pass --model PATH to any GGUF chat model)`);
  }
  const log = createLogger("bench-accuracy", process.env["LOG_LEVEL"] ?? "warn");
  const started = performance.now();
  const tasks = config.sources.flatMap((s) => {
    const entries = readEntries({ questions: s.questions, ...(s.answers !== undefined ? { answers: s.answers } : {}) }).filter((e): e is SingleTurnEntry => e.kind === "single");
    return pickTasks(entries, s.category, config.tasksPerCategory, config.seed, config.split);
  });
  if (tasks.length === 0) throw new Error("no single-turn tasks in the given files (split: " + config.split + ")");
  const modelName = basename(config.model);
  const grammarOffRun = config.grammarOff.filter((f) => config.formats.includes(f));
  console.log(`BFCL accuracy — model: ${modelName}${config.adapters !== undefined ? `, adapter: ${adapterLabel(config.adapters)}` : ""}${config.nativeAdapter !== undefined ? `, native adapter: ${basename(config.nativeAdapter)}` : ""}; models ${config.models.join(", ")}; UNSCRIPTED (the model decides every call; no policy), ${tasks.length} tasks (${config.split} split), seed ${config.seed}`);
  console.log(`formats: ${config.formats.join(", ")}${grammarOffRun.length > 0 ? `; again with the call grammar off: ${grammarOffRun.join(", ")}` : ""}; scored with BFCL's AST rules; tools answer ${TOOL_OUTPUT} after a seeded 30–500 ms.\n`);

  const toolSet = new Map<string, BuiltinTool>();
  const runs: ScoredRun[] = [];
  for (const model of config.models) {
    const runners: Runners = {};
    try {
      if (config.formats.some((f) => f !== "native")) runners.pod = await startPod(config, model === "finetuned" ? config.adapters : undefined, toolSet, log);
      if (config.formats.includes("native"))
        runners.native = await NativeToolCaller.load({ modelPath: config.model, ...(model === "finetuned" ? { adapter: config.nativeAdapter! } : {}), contextSize: config.contextSize, threads: config.threads });
      for (const task of tasks) {
        registerTools(toolSet, task.tools);
        const passes: [FormatName, boolean][] = [...config.formats.map((f): [FormatName, boolean] => [f, true]), ...grammarOffRun.map((f): [FormatName, boolean] => [f, false])];
        for (const [format, grammar] of passes) {
          const run = await attempt(task, model, format, grammar, runners, config);
          runs.push(run);
          process.stderr.write(`  ${model} ${task.id} ${format}${grammar ? "" : " (no grammar)"}: ${run.valid ? "right" : `wrong (${run.cause}: ${run.errorMessage})`} ${run.latencyMs} ms${run.eos ? "" : " [token budget]"}\n`);
        }
      }
    } finally {
      await runners.pod?.close();
      await runners.native?.close();
    }
  }

  const rows = aggregateRuns(runs, config.formats);
  const table = accuracyTable(rows);
  const failures = failureTable(rows);
  const targets = targetLines(rows);
  const wall = Math.round((performance.now() - started) / 1000);
  const resultConfig = {
    model: modelName,
    ...(config.adapters !== undefined ? { adapter: adapterLabel(config.adapters) } : {}),
    ...(config.nativeAdapter !== undefined ? { native_adapter: basename(config.nativeAdapter) } : {}),
    models: config.models,
    formats: config.formats,
    grammar_off: config.grammarOff,
    unscripted: true,
    quick: config.quick,
    seed: config.seed,
    split: config.split,
    tasks_per_category: config.tasksPerCategory,
    categories: [...new Set(tasks.map((t) => t.category))],
    max_tokens: config.maxTokens,
    threads: config.threads,
    sampling: "temperature 0",
    tools: `neutral ${TOOL_OUTPUT} after a seeded 30–500 ms (in-process replay builtins)`,
    latency: "client wall time, request to last byte (CML: whole session incl. tool waits; OpenAI: one request; native: the whole turn incl. tool waits)",
    invalid_calls: "call blocks the engine rejected (parse/schema); the OpenAI response carries only accepted tool_calls (n/a); native calls are parsed from free text with no grammar, so their rate is a grammar-off one",
    accuracy_ci95: "Wilson score interval",
    eos_rate: "share of turns that ended by themselves, not at the token budget",
    load_average: loadavg().map((x) => r2(x)),
    wall_s: wall,
  };
  console.log(table);
  console.log(`\nFailures by cause:\n${failures}`);
  if (targets.length > 0) console.log(`\nTargets (fine-tuned):\n${targets.join("\n")}`);
  mkdirSync(config.outDir, { recursive: true });
  const json = { config: resultConfig, results: rows, runs };
  writeFileSync(join(config.outDir, "accuracy.json"), JSON.stringify(json, null, 2));
  if (config.json !== undefined) {
    mkdirSync(dirname(resolve(config.json)), { recursive: true });
    writeFileSync(config.json, JSON.stringify(json, null, 2));
  }
  writeFileSync(
    join(config.outDir, "accuracy.md"),
    `# BFCL accuracy (unscripted)\n\n${Object.entries(resultConfig).map(([k, v]) => `- ${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join("\n")}\n\n${table}\n\n## Failures by cause\n\n${failures}\n${targets.length > 0 ? `\n## Targets (fine-tuned)\n\n${targets.map((l) => `- ${l}`).join("\n")}\n` : ""}`,
  );
  writeFileSync(join(config.outDir, "accuracy.svg"), await renderSvg(accuracyChartSpec(rows, `BFCL AST accuracy, ${modelName} (unscripted)`)));
  console.log(`\nwrote ${join(config.outDir, "accuracy.{json,md,svg}")}${config.json !== undefined ? ` and ${config.json}` : ""} in ${wall} s`);
}
