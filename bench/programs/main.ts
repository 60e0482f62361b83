/**
 * @module `npm run bench -- programs [--workloads map-reduce,multi-agent,chain]
 * [--deduction on|off|both] [--baselines concurrent,client] [--batch-cap K]
 * [--chunks N] [--agents K] [--output-tokens T] [--chunk-words W] [--seed S]
 * [--rtt-ms MS] [--repeats R] [--engines E] [--context-size C]
 * [--model-preset bench|test] [--quick] [--json FILE] [--out DIR]`
 *
 * Parrot's programs against the baselines Parrot compares with, side by side
 * on the same seeds, through real routers, a real nats-server and real engine
 * processes (the generated model; every token a real forward pass): a
 * map-reduce summary (N maps, one reduce), a multi-agent shape (architect → K
 * coders → K reviewers → K revisions) and a chain of N dependent summaries.
 * - `programs`: one `POST .../programs`; the router runs the DAG, deduces
 *   objectives (task groups for the maps, coders, reviewers), places task
 *   groups together and forks their shared prefix; latency is submission to
 *   the `done` event.
 * - `programs-no-deduction` (`--deduction off|both`): the same through a
 *   router started with `--program-deduction off`, on the same engines: every
 *   request latency-critical on its own (priority and batch cap), no task
 *   groups.
 * - `concurrent`: Parrot's baseline (§8.1): the client renders each prompt
 *   and sends each request as a session (`POST .../sessions`) as soon as its
 *   inputs are known, every request latency-sensitive, under a latency-oriented
 *   batch cap: at most `--batch-cap` requests (the router's latency batch, 4)
 *   decoding per engine, the rest queued first-in first-out, as an engine with a
 *   capped token capacity queues them.
 * - `client`: the same requests one at a time, waiting for each result.
 * With `--rtt-ms` each client request pays a round trip first (a program
 * pays one in all).
 * Per workload and mode: end-to-end latency p50/p90, the medians of the
 * paired per-seed ratios client/mode and concurrent/mode, prompt tokens
 * prefilled vs forked/kept, the engines' batch sizes (sampled), the analytic
 * bound (requests over DAG depth) and the hardware bound (the DAG priced with
 * this machine's measured prefill and batched-step costs, per mode). Writes a
 * table, JSON (`--json FILE`: `{"results": [{"workload", "mode", "p50_ms",
 * "p90_ms", "speedup", "speedup_vs_concurrent", "hardware_bound", ...}],
 * "config"}`) and a Vega-Lite chart (bench/results/programs.vl.json, .svg).
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import type { TopLevelSpec } from "vega-lite";
import { createLogger, readEventStream, type SessionEvent } from "../../common/src/index.js";
import { appKey, openAppsBucket, type AppConfig } from "../../common/src/protocol/index.js";
import { templateOutputs } from "../../common/src/semantic-function.js";
import { spawnEngine, type EngineProcess } from "../../hack/engine-process.js";
import { NatsServer } from "../../hack/nats.js";
import { routerOptions } from "../../router/src/config.js";
import { startRouter, type Router } from "../../router/src/index.js";
import { parseProgram, type ParsedProgram } from "../../router/src/programs/program-request.js";
import { renderUntil } from "../../router/src/programs/render.js";
import { BenchFlags } from "../lib/flags.js";
import { median, quantile, r3 } from "../lib/stats.js";
import { writeChart, writeResultsJson } from "../lib/output.js";
import { measureStepCosts, type StepCosts } from "../lib/step-costs.js";
import { isPresetName } from "../../engine-pod/src/model/index.js";
import {
  analyticBound,
  benchFunctions,
  buildProgram,
  dagLevels,
  fittedOverheadMs,
  modelledMs,
  modelledWidths,
  WORKLOADS,
  type BoundMode,
  type Workload,
  type WorkloadOptions,
} from "./workloads.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const NS = "bench";
const POOL = "programs-pool";
const APP = "programs";
const ALL_MODES = ["programs", "programs-no-deduction", "concurrent", "client"] as const;
type Mode = (typeof ALL_MODES)[number];
const BASELINES = ["concurrent", "client"] as const;

const FLAGS = [
  "--workloads LIST",
  "--deduction on|off|both",
  "--baselines LIST",
  "--batch-cap K",
  "--chunks N",
  "--agents K",
  "--output-tokens T",
  "--chunk-words W",
  "--seed S",
  "--rtt-ms MS",
  "--repeats R",
  "--engines E",
  "--context-size C",
  "--model-preset NAME",
  "--quick",
  "--json FILE",
  "--out DIR",
];

interface Config extends WorkloadOptions {
  quick: boolean;
  workloads: Workload[];
  modes: Mode[];
  batchCap: number;
  seed: number;
  rttMs: number;
  repeats: number;
  engines: number;
  contextSize: number;
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

type Outcome = Omit<Sample, "workload" | "mode" | "seed">;

function list<T extends string>(f: BenchFlags, name: string, allowed: readonly T[], fallback: readonly T[]): T[] {
  const raw = f.str(name);
  if (raw === undefined) return [...fallback];
  const values = raw.split(",").filter((v) => v !== "");
  const bad = values.find((v) => !(allowed as readonly string[]).includes(v));
  if (bad !== undefined) throw new Error(`--${name}: unknown "${bad}" (one or more of ${allowed.join(",")})`);
  return values as T[];
}

function parseConfig(argv: string[]): Config {
  const f = new BenchFlags(argv, FLAGS);
  const quick = f.has("quick");
  const int = (name: string, def: number, min: number): number => f.num(name, def, { integer: true, min });
  const deduction = f.str("deduction") ?? "both";
  if (!["on", "off", "both"].includes(deduction)) throw new Error(`--deduction must be on, off or both, got "${deduction}"`);
  const modes: Mode[] = [...(deduction !== "off" ? (["programs"] as const) : []), ...(deduction !== "on" ? (["programs-no-deduction"] as const) : []), ...list(f, "baselines", BASELINES, BASELINES)];
  return {
    quick,
    workloads: list(f, "workloads", WORKLOADS, WORKLOADS),
    modes,
    batchCap: int("batch-cap", routerOptions({ natsUrl: "nats://unused" }).programLatencyBatch, 1),
    chunks: int("chunks", 16, 1),
    agents: int("agents", quick ? 2 : 4, 1),
    outputTokens: int("output-tokens", quick ? 12 : 32, 1),
    chunkWords: int("chunk-words", quick ? 40 : 120, 1),
    seed: int("seed", 1, 0),
    rttMs: int("rtt-ms", 0, 0),
    repeats: int("repeats", quick ? 2 : 5, 1),
    engines: int("engines", 1, 1),
    contextSize: int("context-size", 1024, 256),
    modelPreset: f.str("model-preset") ?? "bench",
    ...(f.str("json") !== undefined ? { json: f.str("json")! } : {}),
    outDir: f.str("out") ?? join(ROOT, "bench/results"),
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
async function runProgram(base: string, body: Record<string, unknown>, rttMs: number): Promise<Outcome> {
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

/** One request as its own session through the router: its text and usage, or why it failed. */
async function runSession(base: string, prompt: string, settings: { maxTokens: number; temperature: number }): Promise<{ text: string; usage: { promptTokens: number; prefilledTokens: number } } | { error: string }> {
  const res = await postJson(`${base}/v1/apps/${NS}/${APP}/sessions`, { prompt, maxTokens: settings.maxTokens, temperature: settings.temperature });
  if (res.status !== 201) return { error: `${res.status} ${await res.text()}` };
  const opened = (await res.json()) as { eventsUrl: string };
  const events = await fetch(`${base}${opened.eventsUrl}`);
  let text = "";
  let done: Extract<SessionEvent, { type: "done" }> | undefined;
  for await (const e of readEventStream<SessionEvent>(events.body!)) {
    if (e.type === "text") text += e.text;
    if (e.type === "done") done = e;
  }
  if (done === undefined || done.reason === "error") return { error: "the session did not finish" };
  return { text: text.trim(), usage: done.usage };
}

/** A client running the DAG itself: each call's outputs in template order, one session each, values kept client-side. */
class ClientDag {
  readonly values: Map<string, string>;
  promptTokens = 0;
  prefilledTokens = 0;

  constructor(
    private readonly base: string,
    readonly program: ParsedProgram,
    private readonly rttMs: number,
  ) {
    this.values = new Map(program.inputs);
  }

  /** Runs one call's requests; throws with the reason when one fails. */
  async call(id: string, gate: <T>(work: () => Promise<T>) => Promise<T> = (work) => work()): Promise<void> {
    const call = this.program.calls.find((c) => c.id === id)!;
    for (const output of templateOutputs(call.pieces)) {
      const prompt = renderUntil(call, output, (v) => this.values.get(v) ?? "").text;
      const settings = call.fn.outputs.find((o) => o.name === output)!;
      await sleep(this.rttMs);
      const got = await gate(() => runSession(this.base, prompt, settings));
      if ("error" in got) throw new Error(`call ${id}: ${got.error}`);
      this.promptTokens += got.usage.promptTokens;
      this.prefilledTokens += got.usage.prefilledTokens;
      this.values.set(call.produces.get(output)!, got.text);
    }
  }
}

async function timed(dag: ClientDag, work: () => Promise<void>): Promise<Outcome> {
  const t0 = performance.now();
  try {
    await work();
    return { ms: performance.now() - t0, promptTokens: dag.promptTokens, prefilledTokens: dag.prefilledTokens, ok: true };
  } catch (err) {
    return { ms: 0, promptTokens: dag.promptTokens, prefilledTokens: dag.prefilledTokens, ok: false, error: (err as Error).message };
  }
}

/** The same calls from a client, one request at a time, in the DAG's order. */
async function runClient(base: string, app: AppConfig, body: Record<string, unknown>, rttMs: number): Promise<Outcome> {
  const dag = new ClientDag(base, parseProgram(app, body, { maxValueBytes: 1 << 20, maxCalls: 10_000 }), rttMs);
  return timed(dag, async () => {
    for (const id of dag.program.dag.order) await dag.call(id);
  });
}

/**
 * Parrot's baseline: every call sent as soon as its inputs are known, each
 * request latency-sensitive, at most `slots` decoding at once (the batch cap
 * on every engine), the rest queued first-in first-out.
 */
async function runConcurrent(base: string, app: AppConfig, body: Record<string, unknown>, rttMs: number, slots: number): Promise<Outcome> {
  const dag = new ClientDag(base, parseProgram(app, body, { maxValueBytes: 1 << 20, maxCalls: 10_000 }), rttMs);
  let running = 0;
  const waiting: (() => void)[] = [];
  const gate = async <T>(work: () => Promise<T>): Promise<T> => {
    if (running >= slots) await new Promise<void>((r) => waiting.push(r));
    else running++;
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next !== undefined) next();
      else running--;
    }
  };
  const { dag: graph } = dag.program;
  return timed(dag, async () => {
    const started = new Map<string, Promise<void>>();
    const start = (id: string): Promise<void> => {
      let p = started.get(id);
      if (p === undefined) {
        const inputs = graph.calls.get(id)!.inputs.map((v) => graph.producer.get(v)).filter((x): x is string => x !== undefined);
        p = Promise.all(inputs.map(start)).then(() => dag.call(id, gate));
        started.set(id, p);
      }
      return p;
    };
    await Promise.all(graph.order.map(start));
  });
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
  /** Median of the paired per-seed ratios client ms / this mode's ms (absent without the client baseline). */
  speedup: number | null;
  paired_ratios: number[];
  /** The same against Parrot's concurrent baseline. */
  speedup_vs_concurrent: number | null;
  runs: number;
  failed: number;
  prompt_tokens: number;
  prefilled_tokens: number;
  forked_tokens: number;
  batch_mean: number;
  batch_max: number;
  analytic_bound: number;
  /** Modelled client time over this mode's, with this machine's measured costs (`modelledMs`); null without the client. */
  hardware_bound: number | null;
  /** speedup / hardware_bound. */
  reached: number | null;
}

/** How each mode runs a DAG level in the hardware model. */
function boundMode(mode: Mode, cfg: Config): BoundMode {
  switch (mode) {
    case "client":
      return { kind: "client" };
    case "concurrent":
      return { kind: "concurrent", cap: cfg.batchCap * cfg.engines };
    case "programs":
    case "programs-no-deduction":
      // Latency-capped requests never wait for one another on the engine (batch-cap.ts): a program's level batches whole either way.
      return { kind: "program" };
  }
}

async function waitFor(what: string, ready: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

export async function run(argv: string[]): Promise<void> {
  const cfg = parseConfig(argv);
  const t0 = performance.now();
  const app = appConfig(cfg);
  const sequences = Math.max(cfg.chunks, cfg.agents) + 2;
  console.log(
    `programs bench: ${cfg.engines} engine(s) of the generated \`${cfg.modelPreset}\` model, ${sequences} sequences of ${cfg.contextSize} tokens each, one thread; ` +
      `workloads ${cfg.workloads.join(", ")}; modes ${cfg.modes.join(", ")}; N=${cfg.chunks} chunks of ${cfg.chunkWords} words, K=${cfg.agents} agents, ` +
      `${cfg.outputTokens} output tokens per call, batch cap ${cfg.batchCap}, rtt ${cfg.rttMs} ms, ${cfg.repeats} seeds from ${cfg.seed}.`,
  );
  if (!isPresetName(cfg.modelPreset)) throw new Error(`--model-preset: unknown preset ${cfg.modelPreset}`);
  // Before any engine starts, on an otherwise idle machine: what prefill and a batched decode step cost here.
  const widths = [...new Set(cfg.workloads.flatMap((w) => modelledWidths(dagLevels(w, cfg), cfg.batchCap * cfg.engines)))];
  const costs = await measureStepCosts(cfg.modelPreset, widths);
  console.log(
    `measured on a bare context, one thread: prefill ${costs.prefillMsPerToken} ms/token; decode step ` +
      Object.entries(costs.stepMs)
        .map(([b, ms]) => `${ms} ms with ${b} in lockstep (batching gain ${r3((Number(b) * costs.stepMs[1]!) / ms)}x)`)
        .join(", "),
  );
  const nats = await NatsServer.start();
  const engines: EngineProcess[] = [];
  const routers: Router[] = [];
  const samples: Sample[] = [];
  const batches = new Map<string, number[]>();
  try {
    for (let i = 0; i < cfg.engines; i++) {
      engines.push(
        await spawnEngine(
          ["--model-preset", cfg.modelPreset, "--nats-url", nats.url, "--pool", `${NS}/${POOL}`, "--pod-name", `programs-engine-${i}`, "--sequences", String(sequences), "--context-size", String(cfg.contextSize), "--threads", "1", "--heartbeat-ms", "250"],
          { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 300_000 },
        ),
      );
    }
    const nc = await connect({ servers: nats.url });
    await (await openAppsBucket(nc)).put(appKey(NS, APP), JSON.stringify(app));
    await nc.close();
    // Two routers on the same engines: one deducing objectives, one not (--program-deduction off).
    const base = new Map<boolean, string>();
    for (const deduction of [true, false]) {
      const r = await startRouter(
        routerOptions({ natsUrl: nats.url, routerId: `bench-router-${deduction ? "on" : "off"}`, maxBodyBytes: 8 << 20, upstreamTimeoutMs: 60_000, logLevel: "warn", maxVariableBytes: 1 << 20, programDeduction: deduction, programLatencyBatch: cfg.batchCap }),
        createLogger("bench-router", "warn"),
      );
      routers.push(r);
      await waitFor("the router to see the engines and the app", () => r.engines.loads(NS, POOL).length >= cfg.engines && r.apps.get(NS, APP) !== undefined);
      base.set(deduction, `http://127.0.0.1:${r.port}`);
    }
    const on = base.get(true)!;
    const runMode = (mode: Mode, body: Record<string, unknown>): Promise<Outcome> => {
      switch (mode) {
        case "programs":
          return runProgram(on, body, cfg.rttMs);
        case "programs-no-deduction":
          return runProgram(base.get(false)!, body, cfg.rttMs);
        case "concurrent":
          return runConcurrent(on, app, body, cfg.rttMs, cfg.batchCap * cfg.engines);
        case "client":
          return runClient(on, app, body, cfg.rttMs);
      }
    };
    // Warm-up, not measured: the engine's first requests pay one-off costs.
    await runProgram(on, salted(buildProgram(cfg.workloads[0]!, cfg, cfg.seed), "warm-up"), 0);
    for (const workload of cfg.workloads) {
      for (let k = 0; k < cfg.repeats; k++) {
        const seed = cfg.seed + k;
        const body = buildProgram(workload, cfg, seed);
        // Alternate the order of the modes, so none always meets another's warm caches.
        const order = k % 2 === 0 ? cfg.modes : [...cfg.modes].reverse();
        for (const mode of order) {
          // Each run's values are its own, so no mode finds another's prompts in the prefix cache (the app's shared prefix stays shared).
          const own = salted(body, `${mode}-${seed}`);
          const { result, batches: seen } = await sampleBatches(engines, runMode(mode, own));
          samples.push({ workload, mode, seed, ...result });
          batches.set(`${workload}/${mode}`, [...(batches.get(`${workload}/${mode}`) ?? []), ...seen]);
          console.log(`  ${workload} seed ${seed} ${mode}: ${result.ok ? `${Math.round(result.ms)} ms` : `FAILED ${result.error}`}`);
        }
      }
    }
  } finally {
    for (const r of routers) await r.close();
    for (const e of engines) await e.stop();
    await nats.stop();
  }
  const rows = summarize(samples, batches, cfg, costs);
  report(rows, cfg, costs, performance.now() - t0);
  await writeOutputs(rows, cfg, costs);
}

/** Median of the per-seed ratios `baseline` ms / `mode` ms. */
function paired(samples: readonly Sample[], baseline: readonly Sample[]): number[] {
  const out: number[] = [];
  for (const p of samples) {
    const b = baseline.find((x) => x.seed === p.seed);
    if (b !== undefined && p.ms > 0) out.push(b.ms / p.ms);
  }
  return out;
}

function summarize(samples: Sample[], batches: Map<string, number[]>, cfg: Config, costs: StepCosts): ResultRow[] {
  const rows: ResultRow[] = [];
  for (const workload of cfg.workloads) {
    const ok = (mode: Mode): Sample[] => samples.filter((s) => s.workload === workload && s.mode === mode && s.ok);
    const levels = dagLevels(workload, cfg);
    const requests = levels.reduce((a, b) => a + b, 0);
    const perRequest = (mode: Mode): number => {
      const runs = ok(mode);
      return runs.length === 0 ? 0 : runs.reduce((n, s) => n + s.prefilledTokens, 0) / (runs.length * requests);
    };
    const stepMs = (b: number): number => costs.stepMs[b] ?? costs.stepMs[1]! * b;
    const base = { prefillMsPerToken: costs.prefillMsPerToken, stepMs, outputTokens: cfg.outputTokens };
    const hasClient = cfg.modes.includes("client") && ok("client").length > 0;
    const priced = { ...base, overheadMs: hasClient ? fittedOverheadMs(median(ok("client").map((s) => s.ms)), requests, perRequest("client"), base) : 0 };
    const clientModel = modelledMs(levels, { kind: "client" }, perRequest("client"), priced);
    for (const mode of cfg.modes) {
      const runs = ok(mode);
      const ms = runs.map((s) => s.ms);
      const seen = batches.get(`${workload}/${mode}`) ?? [];
      const prompt = runs.reduce((n, s) => n + s.promptTokens, 0);
      const filled = runs.reduce((n, s) => n + s.prefilledTokens, 0);
      const vsClient = hasClient ? paired(runs, ok("client")) : [];
      const vsConcurrent = cfg.modes.includes("concurrent") ? paired(runs, ok("concurrent")) : [];
      const speedup = vsClient.length > 0 ? r3(median(vsClient)) : null;
      const model = modelledMs(levels, boundMode(mode, cfg), perRequest(mode), priced);
      const bound = hasClient && model > 0 ? r3(clientModel / model) : null;
      rows.push({
        workload,
        mode,
        p50_ms: Math.round(quantile(ms, 0.5)),
        p90_ms: Math.round(quantile(ms, 0.9)),
        speedup,
        paired_ratios: vsClient.map(r3),
        speedup_vs_concurrent: vsConcurrent.length > 0 ? r3(median(vsConcurrent)) : null,
        runs: runs.length,
        failed: samples.filter((s) => s.workload === workload && s.mode === mode && !s.ok).length,
        prompt_tokens: prompt,
        prefilled_tokens: filled,
        forked_tokens: prompt - filled,
        batch_mean: seen.length === 0 ? 0 : r3(seen.reduce((a, b) => a + b, 0) / seen.length),
        batch_max: seen.length === 0 ? 0 : Math.max(...seen),
        analytic_bound: r3(analyticBound(workload, cfg)),
        hardware_bound: bound,
        reached: speedup !== null && bound !== null && bound > 0 ? r3(speedup / bound) : null,
      });
    }
  }
  return rows;
}

function report(rows: ResultRow[], cfg: Config, costs: StepCosts, ms: number): void {
  const x = (v: number | null): string => (v === null ? "-" : `${v}x`);
  const head = "| workload | mode | p50 ms | p90 ms | speedup vs client (paired median) | vs concurrent | hardware bound | reached | analytic bound | prompt tokens | prefilled | forked/kept | batch mean | batch max | runs | failed |";
  console.log(`\n${head}`);
  console.log(`|${head.split("|").slice(1, -1).map(() => " --- ").join("|")}|`);
  for (const r of rows) {
    console.log(
      `| ${r.workload} | ${r.mode} | ${r.p50_ms} | ${r.p90_ms} | ${x(r.speedup)} | ${x(r.speedup_vs_concurrent)} | ${x(r.hardware_bound)} | ${r.reached === null ? "-" : `${Math.round(r.reached * 100)}%`} | ${r.analytic_bound}x | ${r.prompt_tokens} | ${r.prefilled_tokens} | ${r.forked_tokens} | ${r.batch_mean} | ${r.batch_max} | ${r.runs} | ${r.failed} |`,
    );
  }
  console.log(
    `\nModes: programs (one submission, objectives deduced), programs-no-deduction (the same with --program-deduction off), ` +
      `concurrent (Parrot's baseline: each request sent once its inputs are known, at most ${cfg.batchCap} decoding per engine, FIFO), client (one request at a time).`,
  );
  console.log(
    `Analytic bound: requests over the DAG's depth ((N+1)/2 map-reduce, (1+3K)/4 multi-agent, 1 chain), reached only if a batch of parallel requests cost one request and round trips were free.`,
  );
  console.log(
    `Hardware bound: the client's modelled time over the mode's, with this machine's measured costs (prefill ${costs.prefillMsPerToken} ms/token, decode step ${Object.entries(costs.stepMs)
      .map(([b, v]) => `${v} ms at ${b}`)
      .join(", ")}), each mode's prefilled tokens per request, and a per-request overhead fitted to the client's p50: ` +
      `the client pays overhead + prefill + n steps alone per request; a program or the concurrent baseline pays one overhead per DAG level, every request's prefill and n steps per round of at most the level's width (programs) or the batch cap (concurrent). ` +
      `Tokens are sums over the runs.`,
  );
  console.log(`N=${cfg.chunks}, K=${cfg.agents}, ${cfg.outputTokens} output tokens, batch cap ${cfg.batchCap}, rtt ${cfg.rttMs} ms, ${cfg.repeats} seeds, ${Math.round(ms / 1000)} s.`);
}

async function writeOutputs(rows: ResultRow[], cfg: Config, costs: StepCosts): Promise<void> {
  const config = {
    quick: cfg.quick,
    workloads: cfg.workloads,
    modes: cfg.modes,
    batch_cap: cfg.batchCap,
    chunks: cfg.chunks,
    agents: cfg.agents,
    output_tokens: cfg.outputTokens,
    chunk_words: cfg.chunkWords,
    seed: cfg.seed,
    rtt_ms: cfg.rttMs,
    repeats: cfg.repeats,
    engines: cfg.engines,
    context_size: cfg.contextSize,
    model: `${cfg.modelPreset} (generated, random weights)`,
    measured_costs: { prefill_ms_per_token: costs.prefillMsPerToken, step_ms_by_batch: costs.stepMs },
  };
  writeResultsJson({ results: rows, config }, cfg.outDir, "programs", cfg.json);
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "End-to-end latency p50 per workload and mode (tick: p90)",
    data: { values: rows.map((r) => ({ workload: r.workload, mode: r.mode, p50_ms: r.p50_ms, p90_ms: r.p90_ms })) },
    facet: { column: { field: "workload", type: "nominal", title: null } },
    spec: {
      width: 180,
      height: 220,
      layer: [
        { mark: "bar", encoding: { x: { field: "mode", type: "nominal", title: null, sort: [...ALL_MODES] }, y: { field: "p50_ms", type: "quantitative", title: "latency p50 (ms)" }, color: { field: "mode", type: "nominal" } } },
        { mark: { type: "tick", color: "black", thickness: 2 }, encoding: { x: { field: "mode", type: "nominal", sort: [...ALL_MODES] }, y: { field: "p90_ms", type: "quantitative" } } },
      ],
    },
    resolve: { scale: { y: "independent" } },
  };
  await writeChart(cfg.outDir, "programs", spec);
  console.log(`\nwrote ${join(cfg.outDir, "programs.json")}, programs.vl.json, programs.svg${cfg.json !== undefined ? ` and ${cfg.json}` : ""}`);
}
