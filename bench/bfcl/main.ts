/**
 * @module `npm run bench -- bfcl [--quick] [--workload parallel|multistep|interrupts]
 * [--questions FILE --answers FILE] [--json FILE] [--seed N] [--tasks N]
 * [--modes sync,async,...] [--sweep 0.5,1,2|none] [--tool-scale F] [--task-timeout-s N] [--tool-docs all|called]
 * [--backend openai [--upstream-url URL --upstream-model NAME]]
 * [--policy script|model [--model GGUF] [--adapter GGUF] [--split eval|tuning|all] [--max-tokens N]]`
 *
 * AsyncLM's evaluation (§6, Appendix A) on the real system: a nats-server,
 * two tool runners replaying each call's seeded duration, and an engine pod
 * on the generated `bench` model, driven by the scripted LPT policy over each
 * task's ground-truth DAG (every token a real forward pass). All modes run
 * side by side on the same tasks with the same seeds; results are compared
 * with the analytic bound and, in a sweep of tool-latency scales, with 1 + E/G.
 * A task that fails in a mode is recorded with its reason and the run goes on.
 *
 * `--backend openai` adds rows for an engine pod with `--backend openai` in
 * front of a third-party OpenAI-compatible server: sync, syncParallel and
 * asyncNaive on the same tasks and seeds (the Async-Naive question: how much
 * of the async speedup survives on an unmodified upstream). Without
 * `--upstream-url`, llama.cpp's server (llama-cpp-python) is started on the
 * same generated `bench` model.
 *
 * `--policy model` takes the script away (AsyncLM §6.2–6.3 with the model
 * deciding): the engine serves a real model (default Gemma 3 270M, with
 * `--adapter` its CML fine-tune), sessions carry no policy, and the calls
 * are whatever the model writes; the tool runners replay a call's recorded
 * duration, or the tool's typical one for arguments nobody recorded. Each
 * run's calls are scored with BFCL's AST rules, so a mode is never faster by
 * calling less, and each task's bound is computed from the calls the model
 * actually made in async mode, at that run's measured time per token. Tasks
 * come from the evaluation split (the fine-tune never saw them).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { createLogger, parseArgv } from "../../common/src/index.js";
import { canonicalJson } from "../../common/src/builtin-tools/index.js";
import type { RunnerToolSpec, ToolRunnerConfig } from "../../common/src/protocol/index.js";
import { NatsExecutor } from "../../engine-pod/src/executor/nats-executor.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { NatsServer } from "../../hack/nats.js";
import { spawnToolRunner, type ToolRunnerProcess } from "../../hack/stack.js";
import { runAsyncNaive } from "./async-naive.js";
import { breakdownRow, breakdownTable, injectMsPerToken, type BreakdownRow } from "./breakdown.js";
import { renderLatencyChart, renderSweepChart, type SweepPoint } from "./charts.js";
import { buildTasks, readEntries, splitByGroundTruth, type SkippedTask } from "./load-tasks.js";
import { aggregate, markdownTable, type ResultRow } from "./report.js";
import { attemptRun, partitionOutcomes, type FailedRun, type RunOutcome } from "./task-attempt.js";
import { runSessionMode, userInterruptId, type ModeName, type RunContext, type TaskRun, type UpstreamModeName } from "./session-modes.js";
import { UpstreamServer } from "../../hack/upstream-server.js";
import { median, quantile } from "../lib/stats.js";
import { scoreCalls } from "../accuracy/ast-scorer.js";
import { inSplit, type Split } from "../accuracy/split.js";
import type { BfclEntry, SingleTurnEntry } from "./bfcl-reader.js";
import { GEMMA_PATH } from "../../hack/real-models.js";
import { existsSync } from "node:fs";
import { taskBound, tokenCounter, type TaskBound } from "./task-bound.js";
import { sameWork } from "./same-work.js";
import { WORKLOADS, type BenchTask, type WorkloadName } from "./workloads.js";
import { runnerLogFile, summarizeRunnerLog } from "../lib/runner-log.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const MODES: readonly ModeName[] = ["sync", "syncNoReuse", "syncParallel", "asyncNaive", "async"];
/** What --quick runs unless `--modes` says otherwise: the modes its targets compare. */
const QUICK_MODES: readonly ModeName[] = ["sync", "syncParallel", "async"];
const UPSTREAM_MODES: readonly UpstreamModeName[] = ["upstreamSync", "upstreamSyncParallel", "upstreamAsyncNaive"];
const FINAL_TEXT = " All done.";
/**
 * The bench's tenant on the bus: its tool pools, its engine pods and the
 * async-naive client share it, because runners answer only into their own
 * namespace (a call whose reply subject is another namespace's is dropped).
 */
const NAMESPACE = "bench";
const TOOL_OUTPUT = "ok";

/**
 * Tasks per workload with --quick: 8 parallel, 5 multi-step and 5 interrupt
 * tasks, so each median rests on five tasks or more. What fits in ten
 * minutes on a 2-core CPU is set by the context: with every tool definition
 * of its BFCL entries (~7k tokens) a multi-step task decodes at ~225 ms per
 * token and 8 + 5 + 5 tasks took 55 min on an idle machine (2026-11-23), so
 * --quick puts only the tools a task calls into its prompt (`--tool-docs
 * called`) and leaves out the secondary no-reuse row; `--tool-docs all` is
 * the paper's setting. That quick run still took 877 s on an idle machine
 * (2026-11-23: ~640 s of task time, the rest starting a tool pool per phase),
 * so --quick also runs only the modes its targets compare (sync,
 * syncParallel, async; asyncNaive with `--modes`) and no latency sweep
 * (`--sweep` to add one): about 9 minutes.
 */
const QUICK_TASKS: Record<WorkloadName, number> = { parallel: 8, multistep: 5, interrupts: 5 };

interface Config {
  quick: boolean;
  workloads: WorkloadName[];
  tasks: Record<WorkloadName, number>;
  seed: number;
  sweepScales: number[];
  sweepTasks: number;
  /** Multiplies every tool duration of the main runs (where E/G sits: slow tools, or a fast GPU's short generations). */
  toolScale: number;
  questions?: string;
  answers?: string;
  json?: string;
  outDir: string;
  callStyle: "json" | "python";
  modes: ModeName[];
  taskTimeoutMs: number;
  /** Tool definitions in each prompt (see BuildOptions.toolDocs). */
  toolDocs: "all" | "called";
  /** `--backend openai`: also the upstream rows; the URL/model of a running server, or none to start llama.cpp's. */
  upstream?: { url?: string; model?: string };
  /** Who writes the calls: the scripted LPT oracle, or the model. */
  policy: "script" | "model";
  /** `--policy model`: the GGUF the engine serves, its LoRA adapter, the BFCL split the tasks come from, the token limit. */
  model?: string;
  adapter?: string;
  split: Split;
  maxTokens: number;
}

/** Modes a model-decided run cannot take: async-naive restarts from client-side history, and the no-reuse row is secondary. */
function unscriptedModesRefused(modes: string | undefined): string[] {
  return (modes?.split(",") ?? []).filter((m) => m === "asyncNaive" || m === "syncNoReuse");
}

function positiveNumber(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} must be a positive number`);
  return n;
}

function parseConfig(argv: string[]): Config {
  const flags = parseArgv(argv);
  const quick = flags.has("quick");
  const workload = flags.get("workload");
  if (workload !== undefined && !(WORKLOADS as readonly string[]).includes(workload)) throw new Error(`--workload must be one of ${WORKLOADS.join("|")}`);
  const n = flags.get("tasks");
  const perWorkload = (quickN: number, fullN: number): number => (n !== undefined ? Number(n) : quick ? quickN : fullN);
  const style = flags.get("call-style") ?? "python";
  const modes = (flags.get("modes")?.split(",") ?? (quick || flags.get("policy") === "model" ? [...QUICK_MODES] : [...MODES])) as ModeName[];
  for (const m of modes) if (!MODES.includes(m)) throw new Error(`--modes takes a comma-separated subset of ${MODES.join(",")}`);
  const sweep = flags.get("sweep") ?? (quick ? "none" : "0.25,0.5,1,2,4,8");
  if (style !== "json" && style !== "python") throw new Error("--call-style must be json or python");
  const toolDocs = flags.get("tool-docs") ?? (quick ? "called" : "all");
  if (toolDocs !== "all" && toolDocs !== "called") throw new Error("--tool-docs must be all or called");
  const policy = flags.get("policy") ?? "script";
  if (policy !== "script" && policy !== "model") throw new Error("--policy must be script or model");
  const split = flags.get("split") ?? (policy === "model" ? "eval" : "all");
  if (split !== "eval" && split !== "tuning" && split !== "all") throw new Error("--split must be eval, tuning or all");
  const model = policy === "model" ? (flags.get("model") ?? GEMMA_PATH) : undefined;
  if (model !== undefined && !existsSync(model)) throw new Error(`--model ${model}: no such file (bash hack/tools/50-gemma.sh fetches Gemma 3 270M)`);
  const adapter = flags.get("adapter");
  if (adapter !== undefined && (policy !== "model" || !existsSync(adapter))) throw new Error(`--adapter ${adapter}: needs --policy model and an existing file`);
  if (policy === "model" && unscriptedModesRefused(flags.get("modes")).length > 0) throw new Error(`--policy model runs the server-side modes (sync, syncParallel, async), not ${unscriptedModesRefused(flags.get("modes")).join(", ")}`);
  return {
    quick,
    // With the model deciding, the parallel workload: its tasks have BFCL answers to score the calls against.
    workloads: workload === undefined ? (policy === "model" ? ["parallel"] : [...WORKLOADS]) : [workload as WorkloadName],
    tasks: { parallel: perWorkload(QUICK_TASKS.parallel, 30), multistep: perWorkload(QUICK_TASKS.multistep, 10), interrupts: perWorkload(QUICK_TASKS.interrupts, 10) },
    seed: Number(flags.get("seed") ?? 1),
    sweepScales: sweep === "none" || policy === "model" ? [] : sweep.split(",").map(Number),
    sweepTasks: Number(flags.get("sweep-tasks") ?? (quick ? 2 : 8)),
    toolScale: positiveNumber(flags.get("tool-scale") ?? "1", "--tool-scale"),
    ...(flags.get("questions") !== undefined ? { questions: flags.get("questions")! } : {}),
    ...(flags.get("answers") !== undefined ? { answers: flags.get("answers")! } : {}),
    ...(flags.get("json") !== undefined ? { json: flags.get("json")! } : {}),
    outDir: flags.get("out") ?? join(ROOT, "bench/results"),
    callStyle: style,
    modes: MODES.filter((m) => modes.includes(m)),
    taskTimeoutMs: Number(flags.get("task-timeout-s") ?? 600) * 1000,
    toolDocs,
    policy,
    ...(model !== undefined ? { model } : {}),
    ...(adapter !== undefined ? { adapter } : {}),
    split,
    maxTokens: Number(flags.get("max-tokens") ?? 192),
    ...(flags.get("backend") === "openai"
      ? { upstream: { ...(flags.get("upstream-url") !== undefined ? { url: flags.get("upstream-url")! } : {}), ...(flags.get("upstream-model") !== undefined ? { model: flags.get("upstream-model")! } : {}) } }
      : {}),
  };
}

/**
 * One recording per (tool, arguments): a call repeated across tasks replays
 * the same duration, as a deterministic tool would. Rewrites the tasks' call
 * durations to the recorded ones, so the bound sees what the runners do.
 */
function replayPool(pool: string, tasks: BenchTask[], fallback = false): ToolRunnerConfig {
  const recordings = new Map<string, Map<string, { arguments: Record<string, unknown>; output: string; latencyMs: number }>>();
  for (const task of tasks)
    for (const call of task.calls) {
      let byArgs = recordings.get(call.tool);
      if (byArgs === undefined) recordings.set(call.tool, (byArgs = new Map()));
      const key = canonicalJson(call.arguments);
      const recorded = byArgs.get(key);
      if (recorded === undefined) byArgs.set(key, { arguments: call.arguments, output: TOOL_OUTPUT, latencyMs: call.latencyMs });
      else call.latencyMs = call.estimatedLatencyMs = recorded.latencyMs;
    }
  const tools: RunnerToolSpec[] = [...recordings].map(([name, byArgs]) => ({
    name,
    description: `replays recorded ${name} outputs`,
    // The engine validates against the task's schema; the runner only replays.
    parameters: { type: "object" },
    implementation: {
      type: "builtin",
      builtin: "replay",
      recordings: [...byArgs.values()],
      // A model may call with arguments nobody recorded: the tool's typical duration then.
      ...(fallback ? { fallback: { output: TOOL_OUTPUT, latencyMs: Math.round(median([...byArgs.values()].map((r) => r.latencyMs))) } } : {}),
    },
  }));
  return { namespace: NAMESPACE, pool, tools, concurrency: 256, maxResultBytes: 4096 };
}

/** Each mode in turn on one task; a mode that fails is recorded and the next one runs. */
async function runTask(task: BenchTask, modes: readonly ModeName[], ctx: RunContext, naive: NatsExecutor, timeoutMs: number, upstreamUrl?: string): Promise<RunOutcome[]> {
  const outcomes: RunOutcome[] = [];
  for (const mode of modes) {
    const onUpstream = (UPSTREAM_MODES as readonly ModeName[]).includes(mode);
    const outcome = await attemptRun(task.id, mode, timeoutMs, (signal) =>
      mode === "asyncNaive" ? runAsyncNaive(task, { ...ctx, executor: naive }, signal) : runSessionMode(task, mode, onUpstream ? { ...ctx, engineUrl: upstreamUrl! } : ctx, signal),
    );
    if (!outcome.ok) process.stderr.write(`  ${task.id} (${task.sources.join(", ")}) ${mode} FAILED: ${outcome.reason}\n`);
    outcomes.push(outcome);
  }
  return outcomes;
}

/** The task as the model did it: the calls its async run made, independent, each with the duration the runners replay for it. */
function realizedTask(task: BenchTask, run: TaskRun): BenchTask {
  const recorded = new Map(task.calls.map((c) => [`${c.tool} ${canonicalJson(c.arguments)}`, c.latencyMs]));
  const typical = (tool: string): number => median(task.calls.filter((c) => c.tool === tool).map((c) => c.latencyMs));
  return {
    ...task,
    calls: (run.modelCalls ?? []).map((c) => ({
      id: c.id,
      tool: c.tool,
      arguments: c.arguments,
      dependsOn: [],
      latencyMs: recorded.get(`${c.tool} ${canonicalJson(c.arguments)}`) ?? (Number.isFinite(typical(c.tool)) ? typical(c.tool) : 0),
    })),
  };
}

/** Whether a model-decided run's calls are right by BFCL's AST rules (undefined without a possible answer). */
function callsRight(task: BenchTask, run: TaskRun, entries: ReadonlyMap<string, BfclEntry>): boolean | undefined {
  const entry = entries.get(task.sources[0] ?? "");
  if (entry?.kind !== "single" || entry.possible.length === 0) return undefined;
  return scoreCalls((entry as SingleTurnEntry).tools, (run.modelCalls ?? []).map((c) => ({ tool: c.tool, arguments: c.arguments })), entry.possible).valid;
}

export async function run(argv: string[]): Promise<void> {
  const config = parseConfig(argv);
  const log = createLogger("bench-bfcl", process.env["LOG_LEVEL"] ?? "warn");
  const started = performance.now();
  const entries = readEntries({ ...(config.questions !== undefined ? { questions: config.questions } : {}), ...(config.answers !== undefined ? { answers: config.answers } : {}) }).filter((e) => inSplit(e.id, config.split));
  const entryById = new Map(entries.map((e) => [e.id, e]));
  const byModel = config.policy === "model";
  const skipped: (SkippedTask & { workload: WorkloadName })[] = [];
  const phases = config.workloads
    .map((w) => {
      const { runnable, skipped: left } = splitByGroundTruth(buildTasks(entries, w, { seed: config.seed, maxTasks: config.tasks[w], latencyScale: config.toolScale, toolDocs: config.toolDocs }));
      for (const s of left) skipped.push({ ...s, workload: w });
      return { workload: w, tasks: runnable };
    })
    .filter((p) => p.tasks.length > 0);
  const skippedLines = skipped.map((s) => `- ${s.workload} ${s.taskId} (${s.sources.join(", ")}): ${s.reason}`).join("\n");
  if (phases.length === 0) throw new Error("no tasks: the given files feed none of the requested workloads");

  if (byModel) {
    console.log(`BFCL benchmark — model: ${basename(config.model!)}${config.adapter !== undefined ? ` with the LoRA adapter ${basename(config.adapter)}` : ""}, UNSCRIPTED: the model decides every call (no policy);`);
    console.log(`every call goes through NATS to real tool runners replaying seeded durations; ${config.split} split; calls scored with BFCL's AST rules.`);
  } else {
    console.log("BFCL benchmark — model: generated `bench` preset (random weights), driven by a scripted LPT policy over each task's ground-truth call DAG");
    console.log("(the paper's cheat sheet): every token is a real forward pass; every call goes through NATS to real tool runners replaying seeded durations.");
  }
  console.log(
    `Tasks: ${phases.map((p) => `${p.tasks.length} ${p.workload}`).join(", ")}; tool definitions in each prompt: ${config.toolDocs === "all" ? "every tool of the task's BFCL entries" : "only the tools the task calls (--tool-docs all for the paper's setting)"}.\n`,
  );
  if (skipped.length > 0) console.log(`Left out (they cannot succeed in any mode):\n${skippedLines}\n`);

  const modelPath = config.model ?? (await ensureModel({ preset: "bench" }));
  const nats = await NatsServer.start();
  const engine = await spawnEngine([
    "--model", modelPath,
    ...(config.adapter !== undefined ? ["--adapters", config.adapter] : []),
    "--executor", "nats", "--nats-url", nats.url, "--pod-name", "bench-engine", "--sequences", "4",
    ...(byModel ? ["--context-size", "4096", "--threads", "2", "--max-tokens", String(config.maxTokens)] : ["--context-size", "16384", "--threads", "1"]),
  ], { env: { POD_NAMESPACE: NAMESPACE } });
  // The upstream rows: an openai-backend engine pod in front of a third-party server (started here unless given).
  const upstreamServer = config.upstream !== undefined && config.upstream.url === undefined ? await UpstreamServer.start({ preset: "bench", contextSize: 16384 }) : undefined;
  const upstreamEngine =
    config.upstream === undefined
      ? undefined
      : await spawnEngine([
          "--backend", "openai",
          "--upstream-url", config.upstream.url ?? upstreamServer!.url,
          "--upstream-model", config.upstream.model ?? upstreamServer?.model ?? "default",
          "--executor", "nats", "--nats-url", nats.url, "--pod-name", "bench-upstream-engine", "--sequences", "4", "--context-size", "16384", "--max-tokens", "4096",
        ], { env: { POD_NAMESPACE: NAMESPACE } });
  const allModes: ModeName[] = [...config.modes, ...(upstreamEngine !== undefined ? UPSTREAM_MODES : [])];
  const naive = await NatsExecutor.connect({ servers: nats.url, namespace: NAMESPACE, enginePod: "bench-naive-client", log });
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const vocab = await llama.loadModel({ modelPath, vocabOnly: true });
  const counter = tokenCounter(vocab, config.callStyle);
  let runners: ToolRunnerProcess[] = [];
  const runnerLog = runnerLogFile("bfcl");
  const withPool = async <T>(pool: ToolRunnerConfig, body: (ctx: RunContext) => Promise<T>): Promise<T> => {
    runners = [await spawnToolRunner(nats.url, pool, `${pool.pool}-0`, {}, runnerLog), await spawnToolRunner(nats.url, pool, `${pool.pool}-1`, {}, runnerLog)];
    try {
      return await body({ engineUrl: engine.url, pool: { namespace: pool.namespace, name: pool.pool }, callStyle: config.callStyle, finalText: FINAL_TEXT, policy: config.policy, maxTokens: config.maxTokens });
    } finally {
      await Promise.all(runners.map((r) => r.stop()));
      runners = [];
    }
  };

  try {
    const rows: ResultRow[] = [];
    const taskRuns: (TaskRun & { workload: WorkloadName; bound_ms: number; bound_reads_ms: number })[] = [];
    const failures: (FailedRun & { workload: WorkloadName | "sweep"; sources?: string[] })[] = [];
    const breakdowns: BreakdownRow[] = [];
    for (const { workload, tasks } of phases) {
      // The secondary no-reuse row re-prefills the whole history at every call (~4x the
      // time of every other mode), so --quick leaves it out.
      const modes = config.quick ? allModes.filter((m) => m !== "syncNoReuse") : allModes;
      const outcomes = await withPool(replayPool(`bfcl-${workload}`, tasks, byModel), async (ctx) => {
        const all: RunOutcome[] = [];
        for (const task of tasks) {
          all.push(...(await runTask(task, modes, ctx, naive, config.taskTimeoutMs, upstreamEngine?.url)));
          process.stderr.write(`  ${workload} ${task.id} (${task.sources.join(", ")}) done\n`);
        }
        return all;
      });
      const { runs, failed } = partitionOutcomes(outcomes);
      for (const f of failed) failures.push({ ...f, workload, sources: tasks.find((t) => t.id === f.taskId)?.sources ?? [] });
      // Bound per task from the async run's own measured time per token (none where async failed).
      // With reading: each injected token costs what the async run's injection steps took per token.
      const bounds = new Map<string, number>();
      const readBounds = new Map<string, number>();
      const taskBounds = new Map<string, TaskBound>();
      for (const task of tasks) {
        const asyncRun = runs.find((r) => r.taskId === task.id && r.mode === "async");
        if (asyncRun === undefined) continue;
        const tpot = asyncRun.tpotMs;
        const msPerToken = asyncRun.breakdown === undefined ? 0 : injectMsPerToken(asyncRun.breakdown, tpot);
        const userIds = task.userInterrupts.map((_u, i) => userInterruptId(i));
        const arrived = asyncRun.breakdown?.userArrivalMs;
        // With the model deciding, the bound is the one of the calls it made, and of the text it wrote.
        const decided = byModel ? realizedTask(task, asyncRun) : task;
        const b = taskBound(decided, tpot, counter, byModel ? (asyncRun.modelText ?? "") : FINAL_TEXT, {
          read: { msPerToken, toolOutput: TOOL_OUTPUT, userIds },
          ...(arrived !== undefined ? { userArrivalMs: userIds.map((id, i) => arrived[id] ?? task.userInterrupts[i]!.atMs) } : {}),
        });
        bounds.set(task.id, b.boundMs);
        readBounds.set(task.id, b.boundWithReadsMs);
        taskBounds.set(task.id, b);
      }
      for (const mode of modes) {
        const parts = runs.flatMap((r) => {
          const b = taskBounds.get(r.taskId);
          return r.mode === mode && r.breakdown !== undefined && b !== undefined
            ? [{ breakdown: r.breakdown, boundMs: b.boundMs, boundWithReadsMs: b.boundWithReadsMs, boundReadMs: b.readMs, boundGenMs: b.genMs, boundTokens: b.genTokens }]
            : [];
        });
        if (parts.length > 0) breakdowns.push(breakdownRow(workload, mode, parts));
      }
      const right = new Map(runs.map((r) => [r, byModel ? callsRight(tasks.find((t) => t.id === r.taskId)!, r, entryById) : undefined]));
      for (const r of runs) taskRuns.push({ ...r, workload, bound_ms: Math.round(bounds.get(r.taskId) ?? NaN), bound_reads_ms: Math.round(readBounds.get(r.taskId) ?? NaN), ...(right.get(r) !== undefined ? { right: right.get(r) } : {}) });
      const syncRuns = modes.includes("sync") ? runs.filter((r) => r.mode === "sync") : undefined;
      // Upstream rows compare with upstream sync.
      const upstreamSyncRuns = runs.filter((r) => r.mode === "upstreamSync");
      for (const mode of modes) {
        const row = aggregate(workload, mode, runs.filter((r) => r.mode === mode), failed.filter((f) => f.mode === mode), bounds, (UPSTREAM_MODES as readonly ModeName[]).includes(mode) ? upstreamSyncRuns : syncRuns, readBounds);
        const scored = runs.filter((r) => r.mode === mode && right.get(r) !== undefined);
        rows.push(scored.length > 0 ? { ...row, accuracy: Math.round((scored.filter((r) => right.get(r)).length / scored.length) * 1000) / 1000, calls_mean: Math.round((scored.reduce((n, r) => n + r.calls, 0) / scored.length) * 10) / 10 } : row);
      }
    }

    // Sweep: the parallel tasks with every tool duration scaled; speedup of async over sync against E/G.
    const sweep: (SweepPoint & { sync_p50_ms: number; async_p50_ms: number; bound_ratio: number })[] = [];
    const sweepBase = splitByGroundTruth(buildTasks(entries, "parallel", { seed: config.seed, maxTasks: config.sweepTasks, toolDocs: config.toolDocs })).runnable;
    if (sweepBase.length > 0)
      for (const scale of config.sweepScales) {
        const tasks = splitByGroundTruth(buildTasks(entries, "parallel", { seed: config.seed, maxTasks: config.sweepTasks, latencyScale: scale, toolDocs: config.toolDocs })).runnable;
        const outcomes = await withPool(replayPool(`bfcl-sweep-${Math.round(scale * 100)}`, tasks), async (ctx) => {
          const all: RunOutcome[] = [];
          for (const task of tasks) all.push(...(await runTask(task, ["sync", "async"], ctx, naive, config.taskTimeoutMs)));
          return all;
        });
        const { runs, failed } = partitionOutcomes(outcomes);
        for (const f of failed) failures.push({ ...f, taskId: `${f.taskId}@x${scale}`, workload: "sweep" });
        // Paired: only tasks that succeeded in both modes.
        const okIn = (mode: ModeName): Set<string> => new Set(runs.filter((r) => r.mode === mode).map((r) => r.taskId));
        const asyncOk = okIn("async");
        const syncOk = okIn("sync");
        const both = (r: TaskRun): boolean => asyncOk.has(r.taskId) && syncOk.has(r.taskId);
        const asyncRuns = runs.filter((r) => r.mode === "async" && both(r));
        const syncRuns = runs.filter((r) => r.mode === "sync" && both(r));
        if (asyncRuns.length === 0) {
          process.stderr.write(`  sweep x${scale}: no task succeeded in both sync and async; point left out\n`);
          continue;
        }
        const tpot = median(asyncRuns.map((r) => r.tpotMs));
        const stats = tasks.filter((t) => asyncOk.has(t.id) && syncOk.has(t.id)).map((t) => taskBound(t, tpot, counter, FINAL_TEXT));
        const statOf = new Map(tasks.filter((t) => asyncOk.has(t.id) && syncOk.has(t.id)).map((t, i) => [t.id, stats[i]!] as const));
        const eOverG = median(stats.map((s) => s.meanExecMs)) / median(stats.map((s) => s.meanGenMs));
        const ratios = asyncRuns.map((r) => r.e2eMs / statOf.get(r.taskId)!.boundMs);
        const syncP50 = quantile(syncRuns.map((r) => r.e2eMs), 0.5);
        const asyncP50 = quantile(asyncRuns.map((r) => r.e2eMs), 0.5);
        // The exact analytic speedup for these tasks (finite |F|): L_Sync model over the LPT bound.
        const analytic = median(stats.map((s) => s.syncModelMs)) / median(stats.map((s) => s.boundMs));
        sweep.push({
          scale,
          e_over_g: Math.round(eOverG * 100) / 100,
          speedup_measured: Math.round((syncP50 / asyncP50) * 100) / 100,
          speedup_predicted: Math.round((1 + eOverG) * 100) / 100,
          speedup_analytic: Math.round(analytic * 100) / 100,
          sync_p50_ms: Math.round(syncP50),
          async_p50_ms: Math.round(asyncP50),
          bound_ratio: Math.round(median(ratios) * 1000) / 1000,
        });
        process.stderr.write(`  sweep x${scale} done\n`);
      }

    const table = markdownTable(rows);
    // With the model deciding, the modes may do different work: also pair only the tasks with the same calls.
    const sameWorkRows = byModel
      ? (["sync", "syncParallel"] as const).flatMap((baseline) =>
          config.modes.includes(baseline) && config.modes.includes("async")
            ? [{ mode: "async", baseline, ...sameWork(taskRuns.filter((r) => r.mode === baseline), taskRuns.filter((r) => r.mode === "async")) }]
            : [],
        )
      : [];
    const sameWorkTable =
      sameWorkRows.length === 0
        ? ""
        : "| mode | against | tasks with the same calls | median per-task speedup | min | max |\n| --- | --- | --- | --- | --- | --- |\n" +
          sameWorkRows
            // No task with the same calls: no ratio to show (not "NaNx").
            .map((w) => `| ${w.mode} | ${w.baseline} | ${w.tasks} of ${w.paired} | ${[w.medianRatio, w.minRatio, w.maxRatio].map((x) => (Number.isFinite(x) ? `${x.toFixed(2)}x` : "–")).join(" | ")} |`)
            .join("\n");
    if (sameWorkTable !== "") console.log(`\nThe same work (tasks where the model made the same calls in both modes; time of the other mode / async's):\n\n${sameWorkTable}`);
    const sweepTable =
      "| tool-latency scale | E/G | sync p50 ms | async p50 ms | speedup | 1 + E/G (Thm 6.2, large \\|F\\|) | measured / (1 + E/G) | exact analytic (App. A, these tasks) | measured / analytic | async bound ratio |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n" +
      sweep
        .map(
          (p) =>
            `| ${p.scale} | ${p.e_over_g} | ${p.sync_p50_ms} | ${p.async_p50_ms} | ${p.speedup_measured.toFixed(2)}x | ${p.speedup_predicted.toFixed(2)}x | ${(p.speedup_measured / p.speedup_predicted).toFixed(2)} | ${p.speedup_analytic.toFixed(2)}x | ${(p.speedup_measured / p.speedup_analytic).toFixed(2)} | ${p.bound_ratio.toFixed(2)} |`,
        )
        .join("\n");
    const resultConfig = {
      runner_log: summarizeRunnerLog(runnerLog),
      quick: config.quick,
      seed: config.seed,
      tasks: Object.fromEntries(phases.map((p) => [p.workload, p.tasks.length])),
      model: byModel ? `${basename(modelPath)}${config.adapter !== undefined ? ` + ${basename(config.adapter)}` : ""}, 2 threads, CPU` : "generated bench preset (random weights, F32), 1 thread, CPU",
      policy: byModel ? "none: the model decides every call (unscripted); bound from the calls it made in async mode" : "scripted LPT over the ground-truth DAG (cheat sheet); every token a real forward pass",
      split: config.split,
      call_style: config.callStyle,
      tool_docs: config.toolDocs === "all" ? "every tool of the task's BFCL entries" : "only the tools the task calls (--quick: a shorter context)",
      tool_latency: `seeded 30–500 ms, mean ≈110 ms (min + truncated exponential)${config.toolScale !== 1 ? `, each ×${config.toolScale} (--tool-scale)` : ""}, replayed by 2 tool runners over NATS`,
      baseline: "speedup_vs_sync is over sync with prefix reuse; syncNoReuse is secondary",
      modes: config.modes,
      failed_runs: failures.length,
      wall_s: Math.round((performance.now() - started) / 1000),
    };
    console.log(table);
    const partsTable = breakdownTable(breakdowns);
    console.log(`\nWhere the time goes (means per task, ms; e2e = decode + injection/fill + trap waits + the rest):\n\n${partsTable}`);
    const failedLines = failures.map((f) => `- ${f.workload} ${f.taskId}${f.sources !== undefined ? ` (${f.sources.join(", ")})` : ""} ${f.mode}: ${f.reason}`).join("\n");
    if (failures.length > 0) console.log(`\nFailed runs (left out of their mode's figures; ratios pair only tasks that succeeded in both modes):\n${failedLines}`);
    console.log("\nSweep (parallel workload, tool durations scaled):\n");
    console.log(sweepTable);
    const json = { results: rows, breakdown: breakdowns, same_work: sameWorkRows, sweep, config: resultConfig, runs: taskRuns, failures, skipped };
    // `--json FILE` names the run: its markdown and charts go beside it, and the default bfcl.* results stay as they are.
    const base = config.json !== undefined ? config.json.replace(/\.json$/, "") : join(config.outDir, "bfcl");
    mkdirSync(dirname(base), { recursive: true });
    writeFileSync(`${base}.json`, JSON.stringify(json, null, 2));
    writeFileSync(`${base}.md`, `# BFCL benchmark results\n\n${Object.entries(resultConfig).map(([k, v]) => `- ${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join("\n")}\n\n${table}\n${sameWorkTable === "" ? "" : `\n## The same work\n\nTasks where the model made the same calls in both modes; time of the other mode / async's.\n\n${sameWorkTable}\n`}\n## Where the time goes\n\nMeans per task, ms; e2e = decode steps + injection/fill steps + trap waits + the rest.\n\n${partsTable}\n${failedLines === "" ? "" : `\n## Failed runs\n\n${failedLines}\n`}${skippedLines === "" ? "" : `\n## Left out\n\n${skippedLines}\n`}\n## Sweep\n\n${sweepTable}\n`);
    const written = [`${base}.json`, `${base}.md`, `${base}-latency.svg`];
    writeFileSync(`${base}-latency.svg`, await renderLatencyChart(rows.filter((r) => r.tasks > 0), allModes));
    if (sweep.length > 0) {
      writeFileSync(`${base}-sweep.svg`, await renderSweepChart(sweep));
      written.push(`${base}-sweep.svg`);
    }
    console.log(`\nwrote ${written.join(", ")} in ${resultConfig.wall_s} s`);
  } finally {
    await Promise.all(runners.map((r) => r.stop()));
    await naive.close();
    await vocab.dispose();
    await llama.dispose();
    await engine.stop();
    await upstreamEngine?.stop();
    await upstreamServer?.stop();
    await nats.stop();
  }
}
