/**
 * @module `npm run bench -- kv-retention [--policies eta,ttl,lru,pin,discard]
 * [--ttl-s 2,10,60] [--sessions N] [--rate PER_S] [--calls N]
 * [--kv-cells N] [--context-size N] [--prompt-words N]
 * [--tool-latency SHARE@MEAN_MS,...] [--sigma S] [--retry-ms MS]
 * [--model-preset bench|test] [--threads N] [--seed S] [--quick]
 * [--json FILE] [--out DIR]`
 *
 * KV across tool waits under memory pressure: the same agent sessions (seeded
 * arrivals, prompts and heavy-tailed tool durations) run on one real engine
 * per retention policy, with fewer sequences (`--kv-cells` / `--context-size`)
 * than the sessions in flight need. A request that finds every sequence held
 * is admitted into a paused session's cells when the policy gives them up,
 * else refused (429) and retried by the client every `--retry-ms`.
 * - `eta`: the paused session expected to wait longest yields (Interlace);
 * - `ttl`: pinned for a TTL, then the longest-paused yields (Continuum), one
 *   row per `--ttl-s`;
 * - `lru`: the least recently active yields;
 * - `pin`: none yields until its result arrives;
 * - `discard`: every trap drops the cells and the resume re-prefills (sync).
 * Reports tasks per minute, task latency p50/p90 (arrival to done, retries
 * included), re-prefilled tokens per task, bytes swapped, admissions delayed
 * by an eviction and refusals, and per task the paired ratio against
 * `discard`; the floor no policy removes is each task's own tool time.
 * Table, JSON (`{"results": [{"policy", "ttl_s", "tasks_per_min",
 * "task_p50_ms", "task_p90_ms", "reprefill_tokens_per_task",
 * "swapped_bytes", ...}], "config"}`) and a chart.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { TopLevelSpec } from "vega-lite";
import { createBuiltinTools } from "../../common/src/builtin-tools/index.js";
import { createLogger, ErrorCode, InterlaceError } from "../../common/src/index.js";
import { createEngine } from "../../engine-pod/src/engine/index.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { RETENTION_POLICIES, type RetentionPolicy } from "../../engine-pod/src/kv/index.js";
import { ensureModel, isPresetName } from "../../engine-pod/src/model/index.js";
import { BenchFlags } from "../lib/flags.js";
import { writeChart, writeResultsJson } from "../lib/output.js";
import { median, quantile, r3 } from "../lib/stats.js";
import { classTools, parseLatencyMix, planSessions, type PlannedSession } from "./workload.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const FLAGS = [
  "--policies LIST",
  "--ttl-s LIST",
  "--sessions N",
  "--rate PER_S",
  "--calls N",
  "--kv-cells N",
  "--context-size N",
  "--prompt-words N",
  "--tool-latency MIX",
  "--sigma S",
  "--retry-ms MS",
  "--model-preset NAME",
  "--threads N",
  "--seed S",
  "--quick",
  "--json FILE",
  "--out DIR",
];

interface Row {
  policy: RetentionPolicy;
  ttl_s: number | null;
  tasks: number;
  failed: number;
  tasks_per_min: number;
  task_p50_ms: number;
  task_p90_ms: number;
  /** Task latency minus the task's own tool time, median: what the policies compete on. */
  overhead_p50_ms: number;
  reprefill_tokens_per_task: number;
  swapped_bytes: number;
  evictions: number;
  admissions_delayed: number;
  admission_refusals: number;
  /** Median over tasks of discard's latency / this policy's, same task (absent without a discard run). */
  paired_speedup_vs_discard?: number;
  latencies: number[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export async function run(argv: string[]): Promise<void> {
  const f = new BenchFlags(argv, FLAGS);
  const quick = f.has("quick");
  const policies = (f.str("policies") ?? RETENTION_POLICIES.join(",")).split(",").map((p) => p.trim()) as RetentionPolicy[];
  for (const p of policies) if (!(RETENTION_POLICIES as readonly string[]).includes(p)) throw new Error(`--policies: unknown policy ${p} (${RETENTION_POLICIES.join(", ")})`);
  const ttls = f.nums("ttl-s", quick ? [2, 20] : [2, 10, 60], { min: 0 });
  const contextSize = f.num("context-size", 1024, { integer: true, min: 256 });
  const kvCells = f.num("kv-cells", 4 * contextSize, { integer: true, min: contextSize });
  const sequences = Math.floor(kvCells / contextSize);
  const preset = f.str("model-preset") ?? "bench";
  if (!isPresetName(preset)) throw new Error(`--model-preset: unknown preset ${preset}`);
  // Tool waits dominate each session's own compute, so sequences, not the decode thread, are what runs short.
  const mix = parseLatencyMix(f.str("tool-latency") ?? (quick ? "0.5@200,0.3@3000,0.2@12000" : "0.5@200,0.3@5000,0.2@30000"));
  const workload = {
    sessions: f.num("sessions", quick ? 24 : 60, { integer: true, min: 1 }),
    rate: f.num("rate", 0.4, { min: 0.001 }),
    calls: f.num("calls", 3, { integer: true, min: 1 }),
    promptWords: f.num("prompt-words", 300, { integer: true, min: 1 }),
    mix,
    sigma: f.num("sigma", 0.5, { min: 0 }),
    seed: f.num("seed", 1, { integer: true, min: 0 }),
  };
  const retryMs = f.num("retry-ms", 50, { min: 1 });
  const threads = f.num("threads", 2, { integer: true, min: 1 });
  const outDir = f.str("out") ?? join(ROOT, "bench/results");
  const modelPath = await ensureModel({ preset });
  const { tools, specs } = classTools(mix);
  const plan = planSessions(workload, specs);
  const log = createLogger("bench-kv-retention", "warn");
  const wall0 = performance.now();

  type Run = { policy: RetentionPolicy; ttl: number | null };
  const runs = policies.flatMap((p): Run[] => (p === "ttl" ? ttls.map((ttl) => ({ policy: p, ttl })) : [{ policy: p, ttl: null }]));
  const rows: Row[] = [];
  for (const { policy, ttl } of runs) {
    const executor = new InProcessExecutor({ tools: createBuiltinTools(tools) });
    const engine = await createEngine(
      { modelPath, gpu: false, sequences, contextSize, threads, kvPolicy: "auto", maxTokens: 512, prefixCache: false, kvRetention: policy, kvRetentionTtlMs: (ttl ?? 30) * 1000 },
      executor,
      log,
    );
    try {
      const row = await runOne(engine, plan, retryMs);
      rows.push({ policy, ttl_s: ttl, ...row });
      console.log(`${ttl !== null ? `ttl ${ttl} s` : policy}: ${row.tasks_per_min} tasks/min, p50 ${row.task_p50_ms} ms, p90 ${row.task_p90_ms} ms, ${row.reprefill_tokens_per_task} re-prefilled tokens/task, ${row.evictions} evictions, ${row.admission_refusals} refusals`);
    } finally {
      await engine.close();
    }
  }
  const discard = rows.find((r) => r.policy === "discard");
  if (discard !== undefined) {
    for (const r of rows) r.paired_speedup_vs_discard = r3(median(r.latencies.map((l, i) => discard.latencies[i]! / l)));
  }

  printTable(rows);
  const floor = median(plan.map((p) => p.toolMs.reduce((a, b) => a + b, 0)));
  console.log(`\nfloor: a task's own tool time, median ${Math.round(floor)} ms; overhead_p50 is each policy's distance from it`);
  const config = { ...workload, mix: mix.map((c) => `${r3(c.share)}@${c.meanMs}`).join(","), kv_cells: kvCells, context_size: contextSize, sequences, model_preset: preset, threads, retry_ms: retryMs, ttl_s: ttls, quick, tool_floor_p50_ms: Math.round(floor), wall_s: Math.round((performance.now() - wall0) / 1000) };
  const results = rows.map(({ latencies: _, ...r }) => r);
  // Per session, for the rows a target is judged on: which sessions a policy made slow, against their own tool time.
  const sessions = plan.map((p) => ({
    index: p.index,
    arrival_ms: Math.round(p.arrivalMs),
    tool_ms: p.toolMs.reduce((a, b) => a + b, 0),
    latency_ms: Object.fromEntries(rows.map((r) => [r.ttl_s !== null ? `ttl ${r.ttl_s} s` : r.policy, Math.round(r.latencies[p.index]!)])),
  }));
  writeResultsJson({ results, config, sessions }, outDir, "kv-retention", f.str("json"));
  await writeChart(outDir, "kv-retention", chart(results));
}

async function runOne(engine: Awaited<ReturnType<typeof createEngine>>, plan: readonly PlannedSession[], retryMs: number): Promise<Omit<Row, "policy" | "ttl_s">> {
  const latencies = new Array<number>(plan.length).fill(0);
  let failed = 0;
  let refusals = 0;
  const start = performance.now();
  await Promise.all(
    plan.map(async (p) => {
      await sleep(p.arrivalMs - (performance.now() - start));
      const arrived = performance.now();
      for (;;) {
        try {
          const done = await engine.createSession(p.request).finished;
          if (done.reason !== "eos") failed++;
          break;
        } catch (err) {
          if (!(err instanceof InterlaceError && err.code === ErrorCode.Capacity)) throw err;
          refusals++;
          await sleep(retryMs);
        }
      }
      latencies[p.index] = performance.now() - arrived;
    }),
  );
  const makespan = performance.now() - start;
  const stats = engine.stats();
  const r = stats.retention!;
  const floors = plan.map((p) => p.toolMs.reduce((a, b) => a + b, 0));
  return {
    tasks: plan.length,
    failed,
    tasks_per_min: r3((plan.length / makespan) * 60_000),
    task_p50_ms: Math.round(quantile(latencies, 0.5)),
    task_p90_ms: Math.round(quantile(latencies, 0.9)),
    overhead_p50_ms: Math.round(median(latencies.map((l, i) => l - floors[i]!))),
    reprefill_tokens_per_task: r3((r.tokensRecomputedByCause.trap + r.tokensRecomputedByCause.eviction) / plan.length),
    swapped_bytes: r.bytesSwappedOut,
    evictions: r.evictionsByDecision.swap + r.evictionsByDecision.recompute,
    admissions_delayed: r.admissionsDelayed,
    admission_refusals: refusals,
    latencies,
  };
}

function printTable(rows: readonly Row[]): void {
  const head = ["policy", "tasks/min", "p50 ms", "p90 ms", "overhead p50 ms", "re-prefill tok/task", "swapped MB", "evictions", "delayed", "refusals", "vs discard (paired median)"];
  console.log(`\n| ${head.join(" | ")} |\n| ${head.map(() => "---").join(" | ")} |`);
  for (const r of rows) {
    const name = r.ttl_s !== null ? `ttl ${r.ttl_s} s` : r.policy;
    const cells = [name, r.tasks_per_min, r.task_p50_ms, r.task_p90_ms, r.overhead_p50_ms, r.reprefill_tokens_per_task, r3(r.swapped_bytes / 1_048_576), r.evictions, r.admissions_delayed, r.admission_refusals, r.paired_speedup_vs_discard !== undefined ? `${r.paired_speedup_vs_discard}x` : "—"];
    console.log(`| ${cells.join(" | ")} |${r.failed > 0 ? ` (${r.failed} not ended by EOS)` : ""}`);
  }
}

function chart(results: readonly Omit<Row, "latencies">[]): TopLevelSpec {
  const values = results.flatMap((r) => {
    const name = r.ttl_s !== null ? `ttl ${r.ttl_s} s` : r.policy;
    return [
      { policy: name, metric: "task p50 (s)", value: r.task_p50_ms / 1000 },
      { policy: name, metric: "task p90 (s)", value: r.task_p90_ms / 1000 },
      { policy: name, metric: "tasks per minute", value: r.tasks_per_min },
    ];
  });
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "KV retention across tool waits under memory pressure (same sessions per policy)",
    data: { values },
    facet: { column: { field: "metric", type: "nominal", title: null } },
    spec: { width: 200, height: 200, mark: "bar", encoding: { x: { field: "policy", type: "nominal", sort: null, title: null }, y: { field: "value", type: "quantitative", title: null }, color: { field: "policy", type: "nominal", legend: null } } },
    resolve: { scale: { y: "independent" } },
  };
}
