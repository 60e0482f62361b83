/**
 * @module `npm run bench -- programs [--chunks N] [--agents K]
 * [--output-tokens T] [--seed S] [--rtt-ms MS] [--repeats R] [--engines E]
 * [--model-preset bench|test] [--quick] [--json FILE] [--out DIR]`
 *
 * Parrot's programs against a client issuing the same calls one request at a
 * time, side by side on the same seeds, through the real router, a real
 * nats-server and real engine processes (the generated model; every token a
 * real forward pass): a map-reduce summary (N maps, one reduce), a
 * multi-agent shape (architect → K coders → K reviewers → K revisions) and a
 * chain of N dependent summaries.
 * - `programs`: one `POST .../programs`; the router runs the DAG, deduces
 *   objectives (task groups for the maps, coders, reviewers), places task
 *   groups together and forks their shared prefix; latency is submission to
 *   the `done` event.
 * - `client`: the client renders each prompt itself and opens one session per
 *   request through the same router (`POST .../sessions`, each request
 *   latency-critical as the app's objective says), waiting for each result
 *   before the next request, with `--rtt-ms` of client round trip before each
 *   request (and before the program's one submission).
 * Per workload and mode: end-to-end latency p50/p90, the median of the
 * paired per-seed ratios client/programs (speedup), prompt tokens prefilled
 * vs forked/kept, the engines' batch sizes seen (sampled), and the analytic
 * bound (requests over DAG depth). Writes a table, JSON (`--json FILE`:
 * `{"results": [{"workload", "mode", "p50_ms", "p90_ms", "speedup", ...}], "config"}`)
 * and a Vega-Lite chart (bench/results/programs.vl.json, .svg).
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import type { TopLevelSpec } from "vega-lite";
import { createLogger, parseArgv, readEventStream, type SessionEvent } from "../../common/src/index.js";
import { appKey, openAppsBucket, type AppConfig } from "../../common/src/protocol/index.js";
import { templateOutputs } from "../../common/src/semantic-function.js";
import { spawnEngine, type EngineProcess } from "../../hack/engine-process.js";
import { NatsServer } from "../../hack/nats.js";
import { routerOptions } from "../../router/src/config.js";
import { startRouter, type Router } from "../../router/src/index.js";
import { parseProgram } from "../../router/src/programs/program-request.js";
import { renderUntil } from "../../router/src/programs/render.js";
import { median, quantile, r3 } from "../lib/stats.js";
import { writeChart, writeResultsJson } from "../lib/output.js";
import { measureStepCosts, type StepCosts } from "../lib/step-costs.js";
import { isPresetName } from "../../engine-pod/src/model/index.js";
import { analyticBound, benchFunctions, buildProgram, dagLevels, fittedOverheadMs, hardwareBound, WORKLOADS, type Workload, type WorkloadOptions } from "./workloads.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const NS = "bench";
const POOL = "programs-pool";
const APP = "programs";
const MODES = ["programs", "client"] as const;
type Mode = (typeof MODES)[number];

interface Config extends WorkloadOptions {
  quick: boolean;
  seed: number;
  rttMs: number;
  repeats: number;
  engines: number;
  modelPreset: string;
  json?: string;
  outDir: string;
}

interface Sample {
  workload: Workload;
  mode: Mode;
  seed: number;
  ms: number;
  promptTokens: number;
  prefilledTokens: number;
  ok: boolean;
  error?: string;
}

function parseConfig(argv: string[]): Config {
  const f = parseArgv(argv);
  const quick = f.has("quick");
  const num = (name: string, def: number, min: number): number => {
    const v = Number(f.get(name) ?? def);
    if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be an integer >= ${min}, got ${f.get(name)}`);
    return v;
  };
  return {
    quick,
    chunks: num("chunks", quick ? 4 : 8, 1),
    agents: num("agents", quick ? 2 : 4, 1),
    outputTokens: num("output-tokens", quick ? 12 : 32, 1),
    chunkWords: num("chunk-words", quick ? 60 : 120, 1),
    seed: num("seed", 1, 0),
    rttMs: num("rtt-ms", 0, 0),
    repeats: num("repeats", quick ? 2 : 5, 1),
    engines: num("engines", 1, 1),
    modelPreset: f.get("model-preset") ?? "bench",
    ...(f.get("json") !== undefined ? { json: f.get("json")! } : {}),
    outDir: f.get("out") ?? join(ROOT, "bench/results"),
  };
}

function appConfig(c: Config): AppConfig {
  return {
    namespace: NS,
    name: APP,
    enginePool: { name: POOL },
    systemPrompt: "You are a careful assistant inside a document and software pipeline. Answer in plain prose, briefly, without inventing facts.",
    fewShot: [],
    callingMode: "async",
    objective: "latency",
    interrupts: { userInterrupts: false, maxQueued: 8 },
    speculation: { enabled: false, lambda: 1, maxInFlight: 2, engineSide: true },
    semanticFunctions: benchFunctions(c.outputTokens),
    maxTokens: Math.max(64, c.outputTokens),
    tools: [],
  };
}

/** The program with every input value tagged by `tag`. */
function salted(body: Record<string, unknown>, tag: string): Record<string, unknown> {
  const inputs = Object.fromEntries(Object.entries(body["inputs"] as Record<string, string>).map(([k, v]) => [k, `[${tag}] ${v}`]));
  return { ...body, inputs };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function postJson(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

/** One program through the router: submission to its `done` event. */
async function runProgram(base: string, body: Record<string, unknown>, rttMs: number): Promise<Omit<Sample, "workload" | "mode" | "seed">> {
  const t0 = performance.now();
  await sleep(rttMs);
  const res = await postJson(`${base}/v1/apps/${NS}/${APP}/programs`, body);
  if (res.status !== 201) return { ms: 0, promptTokens: 0, prefilledTokens: 0, ok: false, error: `${res.status} ${await res.text()}` };
  const created = (await res.json()) as { url: string; eventsUrl: string };
  const stream = await fetch(`${base}${created.eventsUrl}`);
  let state = "unfinished";
  for await (const e of readEventStream<{ type: string; state?: string }>(stream.body!)) if (e.type === "done") state = e.state ?? "";
  const ms = performance.now() - t0;
  const status = (await (await fetch(`${base}${created.url}`)).json()) as { calls: Record<string, { usage: { promptTokens: number; prefilledTokens: number } | null }> };
  const usage = Object.values(status.calls).map((c) => c.usage ?? { promptTokens: 0, prefilledTokens: 0 });
  return {
    ms,
    promptTokens: usage.reduce((n, u) => n + u.promptTokens, 0),
    prefilledTokens: usage.reduce((n, u) => n + u.prefilledTokens, 0),
    ok: state === "succeeded",
    ...(state !== "succeeded" ? { error: `program ${state}` } : {}),
  };
}

/** The same calls from a client, one request at a time, in the DAG's order. */
async function runClient(base: string, app: AppConfig, body: Record<string, unknown>, rttMs: number): Promise<Omit<Sample, "workload" | "mode" | "seed">> {
  const program = parseProgram(app, body, { maxValueBytes: 1 << 20, maxCalls: 10_000 });
  const values = new Map(program.inputs);
  let promptTokens = 0;
  let prefilledTokens = 0;
  const t0 = performance.now();
  for (const id of program.dag.order) {
    const call = program.calls.find((c) => c.id === id)!;
    for (const output of templateOutputs(call.pieces)) {
      const prompt = renderUntil(call, output, (v) => values.get(v) ?? "").text;
      const settings = call.fn.outputs.find((o) => o.name === output)!;
      await sleep(rttMs);
      const res = await postJson(`${base}/v1/apps/${NS}/${APP}/sessions`, { prompt, maxTokens: settings.maxTokens, temperature: settings.temperature });
      if (res.status !== 201) return { ms: 0, promptTokens, prefilledTokens, ok: false, error: `${res.status} ${await res.text()}` };
      const opened = (await res.json()) as { eventsUrl: string };
      const events = await fetch(`${base}${opened.eventsUrl}`);
      let text = "";
      let done: Extract<SessionEvent, { type: "done" }> | undefined;
      for await (const e of readEventStream<SessionEvent>(events.body!)) {
        if (e.type === "text") text += e.text;
        if (e.type === "done") done = e;
      }
      if (done === undefined || done.reason === "error") return { ms: 0, promptTokens, prefilledTokens, ok: false, error: `session of ${id} did not finish` };
      promptTokens += done.usage.promptTokens;
      prefilledTokens += done.usage.prefilledTokens;
      values.set(call.produces.get(output)!, text.trim());
    }
  }
  return { ms: performance.now() - t0, promptTokens, prefilledTokens, ok: true };
}

/** Samples the engines' batch-size gauge while `work` runs. */
async function sampleBatches<T>(engines: EngineProcess[], work: Promise<T>): Promise<{ result: T; batches: number[] }> {
  const batches: number[] = [];
  let running = true;
  const poll = (async () => {
    while (running) {
      for (const e of engines) {
        const text = await (await fetch(`${e.url}/metrics`)).text().catch(() => "");
        const v = Number(/^interlace_engine_batch_size (\S+)$/m.exec(text)?.[1] ?? "0");
        if (v > 0) batches.push(v);
      }
      await sleep(50);
    }
  })();
  try {
    return { result: await work, batches };
  } finally {
    running = false;
    await poll;
  }
}

interface ResultRow {
  workload: Workload;
  mode: Mode;
  p50_ms: number;
  p90_ms: number;
  speedup: number;
  paired_ratios: number[];
  runs: number;
  failed: number;
  prompt_tokens: number;
  prefilled_tokens: number;
  forked_tokens: number;
  batch_mean: number;
  batch_max: number;
  analytic_bound: number;
  /** The bound with this machine's measured prefill and batched-step costs (see `hardwareBound`). */
  hardware_bound: number;
}

export async function run(argv: string[]): Promise<void> {
  const cfg = parseConfig(argv);
  const t0 = performance.now();
  const app = appConfig(cfg);
  const sequences = Math.max(cfg.chunks, cfg.agents) + 2;
  console.log(
    `programs bench: ${cfg.engines} engine(s) of the generated \`${cfg.modelPreset}\` model, ${sequences} sequences each, one thread; N=${cfg.chunks} chunks of ${cfg.chunkWords} words, K=${cfg.agents} agents, ` +
      `${cfg.outputTokens} output tokens per call, rtt ${cfg.rttMs} ms, ${cfg.repeats} seeds from ${cfg.seed}.`,
  );
  if (!isPresetName(cfg.modelPreset)) throw new Error(`--model-preset: unknown preset ${cfg.modelPreset}`);
  // Before any engine starts, on an otherwise idle machine: what prefill and a batched decode step cost here.
  const widths = [...new Set(WORKLOADS.flatMap((w) => dagLevels(w, cfg)))];
  const costs = await measureStepCosts(cfg.modelPreset, widths);
  console.log(
    `measured on a bare context, one thread: prefill ${costs.prefillMsPerToken} ms/token; decode step ` +
      Object.entries(costs.stepMs)
        .map(([b, ms]) => `${ms} ms with ${b} in lockstep (batching gain ${r3((Number(b) * costs.stepMs[1]!) / ms)}x)`)
        .join(", "),
  );
  const nats = await NatsServer.start();
  const engines: EngineProcess[] = [];
  let router: Router | undefined;
  const samples: Sample[] = [];
  const batches = new Map<string, number[]>();
  try {
    for (let i = 0; i < cfg.engines; i++) {
      engines.push(
        await spawnEngine(
          ["--model-preset", cfg.modelPreset, "--nats-url", nats.url, "--pool", `${NS}/${POOL}`, "--pod-name", `programs-engine-${i}`, "--sequences", String(sequences), "--context-size", "4096", "--threads", "1", "--heartbeat-ms", "250"],
          { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 300_000 },
        ),
      );
    }
    const nc = await connect({ servers: nats.url });
    await (await openAppsBucket(nc)).put(appKey(NS, APP), JSON.stringify(app));
    await nc.close();
    router = await startRouter(
      routerOptions({ natsUrl: nats.url, routerId: "bench-router", maxBodyBytes: 8 << 20, upstreamTimeoutMs: 60_000, logLevel: "warn", maxVariableBytes: 1 << 20 }),
      createLogger("bench-router", "warn"),
    );
    const r = router;
    const deadline = Date.now() + 30_000;
    while (r.engines.loads(NS, POOL).length < cfg.engines || r.apps.get(NS, APP) === undefined) {
      if (Date.now() > deadline) throw new Error("the router does not see the engines and the app");
      await sleep(100);
    }
    const base = `http://127.0.0.1:${r.port}`;
    // Warm-up, not measured: the engine's first requests pay one-off costs.
    await runProgram(base, salted(buildProgram("map-reduce", cfg, cfg.seed), "warm-up"), 0);
    for (const workload of WORKLOADS) {
      for (let k = 0; k < cfg.repeats; k++) {
        const seed = cfg.seed + k;
        const body = buildProgram(workload, cfg, seed);
        // Alternate which mode goes first, so neither always meets the other's warm caches.
        const order = k % 2 === 0 ? MODES : [...MODES].reverse();
        for (const mode of order) {
          // Each run's values are its own, so neither mode finds the other's prompts in the prefix cache (the app's shared prefix stays shared).
          const own = salted(body, `${mode}-${seed}`);
          const { result, batches: seen } = await sampleBatches(engines, mode === "programs" ? runProgram(base, own, cfg.rttMs) : runClient(base, app, own, cfg.rttMs));
          samples.push({ workload, mode, seed, ...result });
          batches.set(`${workload}/${mode}`, [...(batches.get(`${workload}/${mode}`) ?? []), ...seen]);
          console.log(`  ${workload} seed ${seed} ${mode}: ${result.ok ? `${Math.round(result.ms)} ms` : `FAILED ${result.error}`}`);
        }
      }
    }
  } finally {
    await router?.close();
    for (const e of engines) await e.stop();
    await nats.stop();
  }
  const rows = summarize(samples, batches, cfg, costs);
  report(rows, cfg, costs, performance.now() - t0);
  await writeOutputs(rows, cfg, costs);
}

function summarize(samples: Sample[], batches: Map<string, number[]>, cfg: Config, costs: StepCosts): ResultRow[] {
  const rows: ResultRow[] = [];
  for (const workload of WORKLOADS) {
    const ok = (mode: Mode): Sample[] => samples.filter((s) => s.workload === workload && s.mode === mode && s.ok);
    const levels = dagLevels(workload, cfg);
    const requests = levels.reduce((a, b) => a + b, 0);
    const perRequest = (mode: Mode): number => {
      const runs = ok(mode);
      return runs.length === 0 ? 0 : runs.reduce((n, s) => n + s.prefilledTokens, 0) / (runs.length * requests);
    };
    const stepMs = (b: number): number => costs.stepMs[b] ?? costs.stepMs[1]! * b;
    const base = { prefillMsPerToken: costs.prefillMsPerToken, stepMs, outputTokens: cfg.outputTokens };
    const clientMs = median(ok("client").map((s) => s.ms));
    const bound = hardwareBound(levels, { client: perRequest("client"), programs: perRequest("programs") }, { ...base, overheadMs: fittedOverheadMs(clientMs, requests, perRequest("client"), base) });
    const paired: number[] = [];
    for (const p of ok("programs")) {
      const c = ok("client").find((x) => x.seed === p.seed);
      if (c !== undefined && p.ms > 0) paired.push(c.ms / p.ms);
    }
    for (const mode of MODES) {
      const runs = ok(mode);
      const ms = runs.map((s) => s.ms);
      const seen = batches.get(`${workload}/${mode}`) ?? [];
      const prompt = runs.reduce((n, s) => n + s.promptTokens, 0);
      const filled = runs.reduce((n, s) => n + s.prefilledTokens, 0);
      rows.push({
        workload,
        mode,
        p50_ms: Math.round(quantile(ms, 0.5)),
        p90_ms: Math.round(quantile(ms, 0.9)),
        speedup: mode === "programs" ? r3(median(paired)) : 1,
        paired_ratios: mode === "programs" ? paired.map(r3) : [],
        runs: runs.length,
        failed: samples.filter((s) => s.workload === workload && s.mode === mode && !s.ok).length,
        prompt_tokens: prompt,
        prefilled_tokens: filled,
        forked_tokens: prompt - filled,
        batch_mean: seen.length === 0 ? 0 : r3(seen.reduce((a, b) => a + b, 0) / seen.length),
        batch_max: seen.length === 0 ? 0 : Math.max(...seen),
        analytic_bound: r3(analyticBound(workload, cfg)),
        hardware_bound: Number.isFinite(bound) ? r3(bound) : 0,
      });
    }
  }
  return rows;
}

function report(rows: ResultRow[], cfg: Config, costs: StepCosts, ms: number): void {
  const head = "| workload | mode | p50 ms | p90 ms | speedup (paired median) | prompt tokens | prefilled | forked/kept | batch mean | batch max | bound | hardware bound | runs | failed |";
  console.log(`\n${head}`);
  console.log(`|${head.split("|").slice(1, -1).map(() => " --- ").join("|")}|`);
  for (const r of rows) {
    console.log(
      `| ${r.workload} | ${r.mode} | ${r.p50_ms} | ${r.p90_ms} | ${r.mode === "programs" ? `${r.speedup}x` : "1x"} | ${r.prompt_tokens} | ${r.prefilled_tokens} | ${r.forked_tokens} | ${r.batch_mean} | ${r.batch_max} | ${r.analytic_bound}x | ${r.hardware_bound}x | ${r.runs} | ${r.failed} |`,
    );
  }
  console.log(
    `\nAnalytic bound: requests over the DAG's depth ((N+1)/2 map-reduce, (1+3K)/4 multi-agent, 1 chain), reached only if a batch of parallel requests cost one request and round trips were free; ` +
      `with --rtt-ms the client pays one round trip per request and a program one in all, so the chain's gain is the round trips (L·rtt) plus the router's shorter path.`,
  );
  console.log(
    `Hardware bound: the same DAG with this machine's measured costs (prefill ${costs.prefillMsPerToken} ms/token, decode step ${Object.entries(costs.stepMs)
      .map(([b, v]) => `${v} ms at ${b}`)
      .join(", ")}), each mode's prefilled tokens per request, and a fixed per-request overhead fitted to the client's p50: ` +
      `the client pays overhead + prefill + n steps alone per request; a program pays one overhead per DAG level, every request's prefill (compute: it does not batch) and n steps at the level's width. ` +
      `Tokens are sums over the runs.`,
  );
  console.log(`N=${cfg.chunks}, K=${cfg.agents}, ${cfg.outputTokens} output tokens, rtt ${cfg.rttMs} ms, ${cfg.repeats} seeds, ${Math.round(ms / 1000)} s.`);
}

async function writeOutputs(rows: ResultRow[], cfg: Config, costs: StepCosts): Promise<void> {
  const config = {
    quick: cfg.quick,
    chunks: cfg.chunks,
    agents: cfg.agents,
    output_tokens: cfg.outputTokens,
    chunk_words: cfg.chunkWords,
    seed: cfg.seed,
    rtt_ms: cfg.rttMs,
    repeats: cfg.repeats,
    engines: cfg.engines,
    model: `${cfg.modelPreset} (generated, random weights)`,
    measured_costs: { prefill_ms_per_token: costs.prefillMsPerToken, step_ms_by_batch: costs.stepMs },
  };
  writeResultsJson({ results: rows, config }, cfg.outDir, "programs", cfg.json);
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "End-to-end latency p50 per workload: programs vs client one request at a time",
    data: { values: rows.map((r) => ({ workload: r.workload, mode: r.mode, p50_ms: r.p50_ms, p90_ms: r.p90_ms })) },
    facet: { column: { field: "workload", type: "nominal", title: null } },
    spec: {
      width: 140,
      height: 220,
      layer: [
        { mark: "bar", encoding: { x: { field: "mode", type: "nominal", title: null }, y: { field: "p50_ms", type: "quantitative", title: "latency p50 (ms)" }, color: { field: "mode", type: "nominal" } } },
        { mark: { type: "tick", color: "black", thickness: 2 }, encoding: { x: { field: "mode", type: "nominal" }, y: { field: "p90_ms", type: "quantitative" } } },
      ],
    },
    resolve: { scale: { y: "independent" } },
  };
  await writeChart(cfg.outDir, "programs", spec);
  console.log(`\nwrote ${join(cfg.outDir, "programs.json")}, programs.vl.json, programs.svg${cfg.json !== undefined ? ` and ${cfg.json}` : ""}`);
}
