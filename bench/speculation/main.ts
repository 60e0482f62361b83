/**
 * @module `npm run bench -- speculation [--quick] [--questions FILE [--answers FILE]]
 * [--agents 1,8] [--tool-ms 300[,600]] [--alpha 0.8[,0.5]] [--lambda 1]
 * [--think-tokens 40] [--tasks N] [--seed N] [--json FILE] [--out DIR]
 * [--draft scripted|model [--model GGUF] [--adapter GGUF]]`
 *
 * Speculative tool calls on the real system: a nats-server, two tool runners
 * replaying each call's seeded duration (around the mean T of `--tool-ms`),
 * and an engine pod serving the generated `bench` model with a generated
 * `test`-sized model that shares its 32k BPE vocabulary as its draft (a call
 * costs the draft as many tokens as the main model, each far cheaper). The
 * engine keeps no idle sequences as a cross-session prefix cache, so the
 * modes, which replay the same tasks one after another, all prefill alike. BFCL tasks (read as the BFCL bench reads them)
 * become agent loops: each task's calls run one after another, with
 * `--think-tokens` of reasoning before each. The main model is driven by the
 * scripted LPT policy and the draft by the scripted draft policy (accuracy α):
 * every token of both is a real forward pass. M agents (`--agents`) run
 * concurrently. For every (α, T, M), six modes run side by side on the same
 * tasks: {sync, async} × {no speculation, client-side, client + engine-side
 * (O2, O3)}; the no-speculation runs do not depend on α, so each (T, M,
 * calling mode) runs them once and every α's rows share them. Every tool
 * is marked speculative here (the benchmark measures the mechanism; BFCL's
 * tools are treated as stateless replays).
 *
 * Reported per mode: time per turn p50/p90, time saved against no
 * speculation in the same calling mode (from mean turn times), the paired
 * per-task ratio (each task's turn time over its own no-speculation turn
 * time, median), throughput, hit rate, wasted tool time, and the paper's
 * prediction for the same α, g/G and T (Eq. 2 client-side, Eq. 6
 * engine-side), then the issue's targets checked against the rows.
 *
 * `--quick` runs 18 task runs: 3 tasks at the issue's target point only
 * (T = 5000 ms ≈ G, α = 0.8), the six modes, no speculation once per calling
 * mode; the α and T sweeps are the full run's. G is measured, not set: on an
 * idle 2-core machine a turn of the `bench` model without speculation (30
 * reasoning tokens, a call block, the re-entry and the first prompt's
 * prefill spread over the task's turns) takes ~5.4 s, so T = 5 s is T ≈ G;
 * the six modes over 4 tasks took 606 s there (86–125 s a mode), so 3 tasks
 * take about 7.5 minutes; `--tasks 8` gives the steadier figures.
 *
 * `--draft model` replaces the scripted draft with a real one: the main model
 * is a real model (default Gemma 3 270M) still driven by the ground-truth
 * calls, and the draft is the same model wearing its CML fine-tune
 * (`--adapter`, default the repository's draft adapter, the CML fine-tune's
 * first run: it guesses the next call best), writing its own guess of the next
 * call on the session's context (`speculation.draft.type: model`). Its hit
 * rate is the draft's real α, and the paper's equations are evaluated at it.
 */
import { existsSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { TopLevelSpec } from "vega-lite";
import { canonicalJson } from "../../common/src/builtin-tools/index.js";
import { parseArgv, SessionClient, type CallingMode, type CreateSessionRequest, type SessionEvent, type ToolSpec } from "../../common/src/index.js";
import type { RunnerToolSpec, ToolRunnerConfig } from "../../common/src/protocol/index.js";
import { ensureModel, PRESETS, type ModelPreset } from "../../engine-pod/src/model/index.js";
import { GEMMA_PATH, SHIPPED_CML_DRAFT_ADAPTER } from "../../hack/real-models.js";
import { scriptedPredictions } from "../../engine-pod/src/speculation/draft-policy.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { NatsServer } from "../../hack/nats.js";
import { spawnToolRunner } from "../../hack/stack.js";
import { buildTasks, readEntries } from "../bfcl/load-tasks.js";
import type { BenchTask } from "../bfcl/workloads.js";
import { mean, median, r3, seededRandom } from "../lib/stats.js";
import { writeChart, writeResultsJson } from "../lib/output.js";
import { pairedRuns, runAgents, type FailedTask } from "./run-agents.js";
import { SPECULATION, summarize, type Measured, type ResultRow, type Run, type Speculation } from "./summary.js";
import { turnSegments } from "./turn-segments.js";
import { runnerLogFile, summarizeRunnerLog } from "../lib/runner-log.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CALLING: readonly CallingMode[] = ["sync", "async"];
const POOL = { namespace: "bench", name: "spec-tools" };
const OUTPUT = "ok";

/** The draft: `test`'s shape (64 x 2 layers) with `bench`'s 32k cl100k vocabulary. */
const DRAFT_PRESET: ModelPreset = { ...PRESETS.test, name: "test-bpe", vocabSize: PRESETS.bench.vocabSize ?? 32000, vocabulary: PRESETS.bench.vocabulary ?? "cl100k" };

interface Config {
  quick: boolean;
  /** `scripted`: the draft predicts the script's next call with accuracy α; `model`: a real draft writes its own guess. */
  draft: "scripted" | "model";
  /** `--draft model`: the main model (also the draft's base) and the draft's adapter. */
  model?: string;
  adapter?: string;
  agents: number[];
  toolMs: number[];
  alpha: number[];
  lambda: number;
  thinkTokens: number;
  tasks: number;
  seed: number;
  questions?: string;
  answers?: string;
  json?: string;
  outDir: string;
  /** 1-minute load average when the run started. */
  loadAtStart: number;
}

const list = (v: string | undefined, def: number[]): number[] => (v === undefined ? def : v.split(",").map(Number));

function parseConfig(argv: string[]): Config {
  const f = parseArgv(argv);
  const quick = f.has("quick");
  const draft = f.get("draft") ?? "scripted";
  if (draft !== "scripted" && draft !== "model") throw new Error("--draft must be scripted or model");
  const model = draft === "model" ? (f.get("model") ?? GEMMA_PATH) : undefined;
  const adapter = draft === "model" ? (f.get("adapter") ?? SHIPPED_CML_DRAFT_ADAPTER) : undefined;
  for (const file of [model, adapter]) if (file !== undefined && !existsSync(file)) throw new Error(`--draft model: ${file} not found (bash hack/tools/50-gemma.sh fetches Gemma; npm run finetune trains an adapter)`);
  const c: Config = {
    quick,
    draft,
    ...(model !== undefined ? { model } : {}),
    ...(adapter !== undefined ? { adapter } : {}),
    agents: list(f.get("agents"), quick ? [1] : [1, 8]),
    // Quick: the targets' point only, T ≈ G (G ≈ 5.4 s per turn, measured idle) and α 0.8: 2 × (1 + 2) mode runs of 3 tasks.
    toolMs: list(f.get("tool-ms"), quick ? [5000] : [1000, 2500, 5000, 10000]),
    // A real draft has the accuracy it has: one pass, its α measured.
    alpha: draft === "model" ? [NaN] : list(f.get("alpha"), quick ? [0.8] : [0.5, 0.8, 1]),
    lambda: Number(f.get("lambda") ?? 1),
    thinkTokens: Number(f.get("think-tokens") ?? 30),
    tasks: Number(f.get("tasks") ?? (quick ? 3 : 8)),
    seed: Number(f.get("seed") ?? 1),
    ...(f.get("questions") !== undefined ? { questions: f.get("questions")! } : {}),
    ...(f.get("answers") !== undefined ? { answers: f.get("answers")! } : {}),
    ...(f.get("json") !== undefined ? { json: f.get("json")! } : {}),
    outDir: f.get("out") ?? join(ROOT, "bench/results"),
    loadAtStart: r3(loadavg()[0]!),
  };
  if (draft === "scripted") for (const a of c.alpha) if (!(a >= 0 && a <= 1)) throw new Error(`--alpha values must be in 0..1, got ${a}`);
  for (const x of [...c.agents, ...c.toolMs, c.lambda, c.tasks]) if (!(Number.isFinite(x) && x > 0)) throw new Error("--agents, --tool-ms, --lambda and --tasks must be positive numbers");
  return c;
}

/** Each task's calls in a chain (one per turn), with seeded latencies around `toolMs`, every tool speculative. */
function chainTasks(base: BenchTask[], toolMs: number, seed: number): BenchTask[] {
  const rng = seededRandom(seed * 7919 + toolMs);
  return base.map((task) => ({
    ...task,
    tools: task.tools.map((t) => ({ ...t, speculative: true })),
    calls: task.calls.map((c, i) => {
      const latencyMs = Math.round(toolMs * (0.5 + rng()));
      return { ...c, id: `c${i + 1}`, dependsOn: i === 0 ? [] : [`c${i}`], latencyMs, estimatedLatencyMs: latencyMs };
    }),
  }));
}

/**
 * Replay runners: one recording per (tool, arguments); repeats replay the
 * first duration (written back into the task). The scripted draft's wrong
 * guesses are pure functions of the task, turn and seed, so they are
 * recorded too, each taking as long as the call it stood in for: a wrong
 * guess costs real tool time, as it would with real tools.
 */
function replayPool(tasks: BenchTask[], cfg: Config): ToolRunnerConfig {
  const rec = new Map<string, Map<string, { arguments: Record<string, unknown>; output: string; latencyMs: number }>>();
  const record = (tool: string, args: Record<string, unknown>, latencyMs: number): number => {
    let byArgs = rec.get(tool);
    if (byArgs === undefined) rec.set(tool, (byArgs = new Map()));
    const key = canonicalJson(args);
    const seen = byArgs.get(key);
    if (seen !== undefined) return seen.latencyMs;
    byArgs.set(key, { arguments: args, output: OUTPUT, latencyMs });
    return latencyMs;
  };
  for (const task of tasks) for (const call of task.calls) call.latencyMs = call.estimatedLatencyMs = record(call.tool, call.arguments, call.latencyMs);
  for (const task of tasks)
    for (const alpha of cfg.draft === "scripted" ? cfg.alpha : [])
      task.calls.forEach((call, turn) => {
        const guesses = scriptedPredictions({ tool: call.tool, arguments: call.arguments }, speculativeTools(task), cfg.lambda, {
          alpha,
          seed: cfg.seed,
          sessionKey: JSON.stringify(task.calls.map((c) => [c.id, c.tool, c.arguments])),
          turn,
        });
        for (const g of guesses) record(g.tool, g.arguments, call.latencyMs);
      });
  const tools: RunnerToolSpec[] = [...rec].map(([name, byArgs]) => ({
    name,
    description: `replays ${name}`,
    parameters: { type: "object" },
    implementation: {
      type: "builtin",
      builtin: "replay",
      recordings: [...byArgs.values()],
      // A real draft guesses arguments nobody recorded: a wrong guess costs the tool's typical time.
      ...(cfg.draft === "model" ? { fallback: { output: OUTPUT, latencyMs: Math.round(median([...byArgs.values()].map((r) => r.latencyMs))) } } : {}),
    },
  }));
  return { namespace: POOL.namespace, pool: POOL.name, tools, concurrency: 256, maxResultBytes: 4096 };
}

/** The tools a task's sessions get, in order (all speculative here): the scripted draft guesses among them. */
function speculativeTools(task: BenchTask): ToolSpec[] {
  return task.tools.map((t) => ({ ...t, pool: POOL, estimatedLatencyMs: Math.round(mean(task.calls.map((c) => c.latencyMs))) }));
}

function request(task: BenchTask, calling: CallingMode, spec: Speculation, alpha: number, cfg: Config): CreateSessionRequest {
  const tools = speculativeTools(task);
  return {
    prompt: task.prompt,
    tools,
    mode: calling,
    temperature: 0,
    maxTokens: 8192,
    kvPolicy: "keep",
    policy: {
      type: "lpt-dag",
      callStyle: "json",
      leadTokens: cfg.thinkTokens,
      thinkTokens: cfg.thinkTokens,
      finalText: " Done.",
      calls: task.calls.map((c) => ({ id: c.id, tool: c.tool, arguments: c.arguments, dependsOn: c.dependsOn, estimatedLatencyMs: c.latencyMs })),
    },
    ...(spec === "none"
      ? {}
      : {
          speculation: {
            enabled: true,
            lambda: cfg.lambda,
            maxInFlight: Math.max(2, cfg.lambda),
            engineSide: spec === "client+engine",
            draft: cfg.draft === "model" ? { type: "model" as const } : { type: "scripted" as const, alpha, seed: cfg.seed },
          },
        }),
  };
}

async function runMode(url: string, tasks: BenchTask[], agents: number, make: (t: BenchTask) => CreateSessionRequest): Promise<Measured> {
  const client = new SessionClient(url);
  const t0 = performance.now();
  const { runs, failed } = await runAgents(tasks, agents, async (task): Promise<Run> => {
    const { id } = await client.create(make(task));
    let done: Run["done"] | undefined;
    const events: SessionEvent[] = [];
    for await (const e of client.events(id)) {
      events.push(e);
      if (e.type === "done") done = e;
    }
    if (done === undefined || done.reason !== "eos") {
      const error = events.find((e) => e.type === "error");
      throw new Error(`session ended ${done?.reason ?? "without done"}${error?.type === "error" ? `: ${error.message}` : ""}`);
    }
    return { task, done, segments: turnSegments(events, task.calls.map((c) => c.latencyMs)) };
  });
  return { runs, failed, wallMs: performance.now() - t0 };
}

export async function run(argv: string[]): Promise<void> {
  const cfg = parseConfig(argv);
  const t0 = performance.now();
  const entries = readEntries({ ...(cfg.questions !== undefined ? { questions: cfg.questions } : {}), ...(cfg.answers !== undefined ? { answers: cfg.answers } : {}) });
  // Tasks with at least two calls: a chain of turns (single-call tasks have one turn).
  const base = buildTasks(entries, "parallel", { seed: cfg.seed, maxTasks: cfg.tasks * 4 }).filter((t) => t.calls.length >= 2).slice(0, cfg.tasks);
  if (base.length === 0) throw new Error("no BFCL task with two or more calls in the given files");
  if (cfg.draft === "model") {
    console.log(`Speculative tool calls with a REAL draft — main model: ${basename(cfg.model!)} driven by the ground-truth calls; draft: the same model with ${basename(cfg.adapter!)}, writing its own guess of each next call.`);
    console.log("Main: scripted LPT policy over each task's calls in a chain; draft: unscripted (its hit rate is its real α). Every token of both is a real forward pass;");
  } else {
    console.log("Speculative tool calls — main model: generated `bench` preset; draft model: generated `test` shape with the same 32k vocabulary (random weights).");
    console.log("Main: scripted LPT policy over each task's calls in a chain; draft: scripted with accuracy α. Every token of both is a real forward pass;");
  }
  console.log("every call goes through NATS to real tool runners replaying seeded durations. All tools are marked speculative.\n");

  const [modelPath, draftPath] = cfg.draft === "model" ? [cfg.model!, cfg.model!] : await Promise.all([ensureModel({ preset: "bench" }), ensureModel({ preset: DRAFT_PRESET })]);
  const nats = await NatsServer.start();
  const runnerLog = runnerLogFile("speculation");
  const maxAgents = Math.max(...cfg.agents);
  const engine = await spawnEngine([
    "--model", modelPath, "--draft-model", draftPath, "--max-draft-tokens", "32",
    ...(cfg.adapter !== undefined ? ["--draft-adapters", cfg.adapter] : []),
    "--executor", "nats", "--nats-url", nats.url, "--pod-name", "bench-spec",
    "--sequences", String(Math.max(2, maxAgents)), "--context-size", "4096", "--threads", "1", "--prefix-cache", "false",
    // The engine's tenant is the pool's: runners answer only into their own namespace.
  ], { env: { POD_NAMESPACE: POOL.namespace } });
  const rows: ResultRow[] = [];
  const failures: (FailedTask & { calling_mode: CallingMode; speculation: Speculation; alpha: number | null; tool_ms: number; agents: number })[] = [];
  const recordFailures = (m: Measured, where: { calling_mode: CallingMode; speculation: Speculation; alpha: number | null; tool_ms: number; agents: number }): void => {
    for (const f of m.failed) {
      failures.push({ ...f, ...where });
      process.stderr.write(`  task ${f.taskId} ${where.calling_mode}/${where.speculation} FAILED: ${f.reason}\n`);
    }
  };
  try {
    for (const toolMs of cfg.toolMs) {
      const tasks = chainTasks(base, toolMs, cfg.seed);
      const pool = replayPool(tasks, cfg);
      const runners = [await spawnToolRunner(nats.url, pool, "spec-0", {}, runnerLog), await spawnToolRunner(nats.url, pool, "spec-1", {}, runnerLog)];
      try {
        for (const agents of cfg.agents)
          for (const calling of CALLING) {
            // No speculation does not depend on α: one run, the baseline of every α's rows.
            const none = await runMode(engine.url, tasks, agents, (t) => request(t, calling, "none", 0, cfg));
            recordFailures(none, { calling_mode: calling, speculation: "none", alpha: null, tool_ms: toolMs, agents });
            process.stderr.write(`  T=${toolMs} M=${agents} ${calling} none done (${Math.round(none.wallMs / 1000)} s)\n`);
            for (const alpha of cfg.alpha) {
              const measured = new Map<Speculation, Measured>([["none", none]]);
              for (const spec of SPECULATION.filter((x) => x !== "none")) {
                const m = await runMode(engine.url, tasks, agents, (t) => request(t, calling, spec, alpha, cfg));
                recordFailures(m, { calling_mode: calling, speculation: spec, alpha, tool_ms: toolMs, agents });
                measured.set(spec, m);
                process.stderr.write(`  T=${toolMs} M=${agents} α=${Number.isNaN(alpha) ? "real draft" : alpha} ${calling} ${spec} done (${Math.round(m.wallMs / 1000)} s)\n`);
              }
              // The figures pair tasks: only those that succeeded in all three modes of this setting count.
              const paired = pairedRuns(new Map([...measured].map(([spec, m]) => [spec, m.runs])));
              if ((paired.get("none") ?? []).length === 0) {
                process.stderr.write(`  T=${toolMs} M=${agents} α=${alpha} ${calling}: no task succeeded in every mode; rows left out\n`);
                continue;
              }
              for (const [spec, m] of measured) measured.set(spec, { ...m, runs: paired.get(spec)! });
              rows.push(...summarize(measured, { calling, alpha, toolMs, agents, thinkTokens: cfg.thinkTokens }));
            }
          }
      } finally {
        await Promise.all(runners.map((r) => r.stop()));
      }
    }
  } finally {
    await engine.stop();
    await nats.stop();
  }
  report(rows, cfg, performance.now() - t0);
  console.log(summarizeRunnerLog(runnerLog));
  if (failures.length > 0) {
    console.log(`\nFailed task runs (left out; each row pairs only tasks that succeeded in all its modes):`);
    for (const f of failures) console.log(`- ${f.calling_mode}/${f.speculation} α=${f.alpha ?? "–"} T=${f.tool_ms} M=${f.agents} task ${f.taskId}: ${f.reason}`);
  }
  await writeOutputs(rows, cfg, failures);
}

function report(rows: ResultRow[], cfg: Config, ms: number): void {
  const head = "| mode | speculation | α | T ms | T/G | g/G | M | turn p50 ms | turn p90 ms | time saved | predicted (paper) | predicted per turn | paired ratio | hit rate | wasted tool ms | O2 tokens accepted | tokens/s |";
  console.log(head);
  console.log(`|${head.split("|").slice(1, -1).map(() => " --- ").join("|")}|`);
  for (const r of rows)
    console.log(
      `| ${r.calling_mode} | ${r.speculation} | ${r.alpha} | ${r.tool_ms} | ${r.t_over_G} | ${r.g_over_G} | ${r.agents} | ${r.turn_p50_ms} | ${r.turn_p90_ms} | ${(r.time_saved * 100).toFixed(1)}% | ${(r.predicted_time_saved * 100).toFixed(1)}% | ${(r.predicted_per_turn_time_saved * 100).toFixed(1)}% | ${r.paired_ratio_p50} | ${r.hit_rate} | ${r.wasted_tool_ms} | ${r.draft_tokens_accepted} | ${r.tokens_per_s} |`,
    );
  console.log(`\nAnalytic bound (Lemma 1): client-side speedup < 2, i.e. time saved < 50%; predicted (paper): Eq. 2 (client), Eq. 6 vs Eq. 5 (client+engine, o = 0), at the set α and the mean T; ` +
      `predicted per turn: at the measured hit rate, Eq. 1 on each turn of the no-speculation runs as their events timed it (G_i, T_i, re-entry), and for client+engine Eq. 6 with Eq. 1's max{generation, g + T_i} for a hit ` +
      `(the draft, not the client, fills the cache here, so a hit's output arrives g + T_i after the turn start).`);
  for (const line of targets(rows)) console.log(line);
  console.log(`${rows.length} rows, λ = ${cfg.lambda}, ${cfg.thinkTokens} reasoning tokens per turn, ${cfg.tasks} tasks per mode, ${Math.round(ms / 1000)} s.`);
}

/** The issue's targets, checked against the measured rows (each setting of α, T, M on its own). */
export function targets(rows: readonly ResultRow[]): string[] {
  const out: string[] = ["Targets:"];
  const settings = new Map<string, ResultRow[]>();
  for (const r of rows) {
    const k = `α=${r.alpha} T=${r.tool_ms} M=${r.agents}`;
    settings.set(k, [...(settings.get(k) ?? []), r]);
  }
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  for (const [k, rs] of settings) {
    const get = (c: CallingMode, sp: Speculation) => rs.find((r) => r.calling_mode === c && r.speculation === sp);
    const client = get("sync", "client");
    const engine = get("sync", "client+engine");
    if (client !== undefined) {
      const near = client.alpha >= 0.7 && client.alpha <= 0.9 && client.t_over_G >= 0.5 && client.t_over_G <= 2;
      const off = (predicted: number): number => (predicted === 0 ? NaN : Math.abs(client.time_saved - predicted) / predicted);
      const paper = off(client.predicted_time_saved);
      const perTurn = off(client.predicted_per_turn_time_saved);
      out.push(
        `- ${k} (T/G ${client.t_over_G}): sync client-side saves ${pct(client.time_saved)}${near ? (client.time_saved >= 0.2 ? " (≥ 20%: met)" : ` (target ≥ 20%: missed by ${pct(0.2 - client.time_saved)})`) : " (target applies at T ≈ G, α ≈ 0.8)"}; ` +
          `Eq. 2 at α ${client.alpha} and the mean T predicts ${pct(client.predicted_time_saved)} (${Number.isFinite(paper) ? `${pct(paper)} off` : "no prediction"}), ` +
          `per turn at the measured hit rate ${client.hit_rate} ${pct(client.predicted_per_turn_time_saved)} (${Number.isFinite(perTurn) ? `${pct(perTurn)} off; target ≤ 15%: ${perTurn <= 0.15 ? "met" : "missed"}` : "no prediction"})`,
      );
    }
    if (client !== undefined && engine !== undefined) {
      const more = engine.time_saved - client.time_saved;
      out.push(`  engine-side adds ${pct(more)} in sync (target ≥ 2%: ${more >= 0.02 ? "met" : "missed"})`);
    }
    const fastest = [...rs].sort((a, b) => a.turn_p50_ms - b.turn_p50_ms)[0];
    if (fastest !== undefined) {
      const ok = fastest.calling_mode === "async" && fastest.speculation !== "none";
      out.push(`  fastest mode (turn p50): ${fastest.calling_mode}/${fastest.speculation} (target async + speculation: ${ok ? "met" : "missed"})`);
    }
  }
  return out;
}

async function writeOutputs(rows: ResultRow[], cfg: Config, failures: readonly object[]): Promise<void> {
  const config = {
    quick: cfg.quick,
    agents: cfg.agents,
    tool_ms: cfg.toolMs,
    alpha: cfg.alpha,
    lambda: cfg.lambda,
    think_tokens: cfg.thinkTokens,
    tasks: cfg.tasks,
    seed: cfg.seed,
    ...(cfg.questions !== undefined ? { questions: cfg.questions } : {}),
    draft: cfg.draft,
    main_model: cfg.draft === "model" ? `${basename(cfg.model!)} (scripted: the ground-truth calls)` : "bench (generated)",
    draft_model: cfg.draft === "model" ? `${basename(cfg.model!)} + ${basename(cfg.adapter!)} (unscripted)` : "test shape with the bench vocabulary (generated)",
    scripted: cfg.draft === "scripted",
    // How busy the machine was: the figures are only comparable on an idle one.
    cpus: cpus().length,
    load_avg_1m: { start: cfg.loadAtStart, end: r3(loadavg()[0]!) },
  };
  writeResultsJson({ results: rows, config, failures }, cfg.outDir, "speculation", cfg.json);
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "Time saved per turn vs no speculation: measured (bars) and predicted (ticks: Eq. 2 / Eq. 6)",
    data: { values: rows.filter((r) => r.speculation !== "none").map((r) => ({ ...r, setting: `α=${r.alpha} T=${r.tool_ms} M=${r.agents}`, mode: `${r.calling_mode}/${r.speculation}` })) },
    facet: { column: { field: "setting", type: "nominal", title: null } },
    spec: {
      width: 180,
      height: 200,
      layer: [
        { mark: "bar", encoding: { x: { field: "mode", type: "nominal", title: null }, y: { field: "time_saved", type: "quantitative", axis: { format: "%" }, title: "time saved" }, color: { field: "calling_mode", type: "nominal" } } },
        { mark: { type: "tick", color: "black", thickness: 2 }, encoding: { x: { field: "mode", type: "nominal" }, y: { field: "predicted_time_saved", type: "quantitative" } } },
      ],
    },
  };
  // The sweep: time saved against α, one line per mode, one panel per T/G (measured solid, predicted dashed).
  const sweep: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "Time saved against draft accuracy α, per tool time T (dashed: Eq. 2 / Eq. 6)",
    data: {
      values: rows
        .filter((r) => r.speculation !== "none")
        .flatMap((r) => [
          { ...r, panel: `T=${r.tool_ms} ms M=${r.agents}`, mode: `${r.calling_mode}/${r.speculation}`, kind: "measured", saved: r.time_saved },
          { ...r, panel: `T=${r.tool_ms} ms M=${r.agents}`, mode: `${r.calling_mode}/${r.speculation}`, kind: "predicted", saved: r.predicted_time_saved },
        ]),
    },
    facet: { column: { field: "panel", type: "nominal", title: null } },
    spec: {
      width: 220,
      height: 200,
      mark: { type: "line", point: true },
      encoding: {
        x: { field: "alpha", type: "quantitative", title: "α" },
        y: { field: "saved", type: "quantitative", axis: { format: "%" }, title: "time saved" },
        color: { field: "mode", type: "nominal" },
        strokeDash: { field: "kind", type: "nominal", title: null },
      },
    },
  };
  const written: string[] = [];
  for (const [name, chart] of [["speculation", spec], ["speculation-sweep", sweep]] as const) {
    await writeChart(cfg.outDir, name, chart);
    written.push(`${name}.svg`);
  }
  console.log(`\nwrote ${join(cfg.outDir, "speculation.json")}, ${written.join(", ")}${cfg.json !== undefined ? ` and ${cfg.json}` : ""}`);
}
