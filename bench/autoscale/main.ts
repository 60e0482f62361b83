/**
 * @module `npm run bench -- autoscale [flags]`: autoscaling policies side by
 * side on the same load trace and seed — `static` (both pools at max),
 * `engine-only` (engines on queue depth, tools at min: what KEDA or KubeAI
 * would do) and `joint` (the operator's decision function) — each on a
 * local stack of real processes: nats-server, the router, engine pods on
 * the generated model, and tool runners whose `sleep` tool takes
 * `--tool-ms`. A scaler loop in the bench samples the live signals the
 * operator samples and starts or SIGTERMs processes (engines drain, runners
 * hand back). Per policy: SLO attainment, replica-seconds per side, scale
 * decisions, cold starts, task p50/p90, and the cost floor a clairvoyant
 * follower at the joint targets would reach; a table, `--json FILE` and an SVG
 * chart next to it. See the README's benchmark section for the flags.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { CALL_RATE_WINDOW_MS, ENGINE_SEQUENCE_TARGET, TOOL_TARGET_UTILISATION } from "../../operator/src/autoscaling/policy.js";
import { BenchFlags } from "../lib/flags.js";
import { renderSvg } from "../lib/output.js";
import { chartSpec } from "./chart.js";
import { POLICIES, policyOf, type PolicyName, type ScaleSetup } from "./policies.js";
import { runPolicy, type PolicyRun, type RunSetup } from "./run-policy.js";
import { checkTargets, describeMisses, describeParts, medianParts, partsJson, summarize, withCost } from "./summary.js";
import { parseTrace, shapedTrace, traceArrivals, type Trace } from "./trace.js";

const FLAGS = [
  "--trace FILE", "--duration S", "--base-rate R", "--step-rate R", "--burst-rate R", "--seed N", "--slo-task-p90-ms MS",
  "--tool-ms MS", "--calls N", "--think-tokens N", "--min-engines N", "--max-engines N", "--min-runners N", "--max-runners N",
  "--runner-concurrency N", "--sequences N", "--stabilization-s S", "--idle-s S", "--tick-ms MS", "--engine-target F",
  "--drain-grace-ms MS", "--prefix-store N", "--patience-ms MS", "--model-preset NAME", "--policies LIST", "--quick", "--json FILE",
];

export interface AutoscaleConfig {
  trace: Trace;
  traceFile?: string;
  seed: number;
  policies: PolicyName[];
  scale: ScaleSetup;
  run: RunSetup;
  quick: boolean;
  json?: string;
}

export function parseConfig(argv: readonly string[]): AutoscaleConfig {
  const f = new BenchFlags(argv, FLAGS);
  const quick = f.has("quick");
  const pos = { min: 0 };
  const duration = f.str("duration") === undefined ? undefined : f.num("duration", 0, { min: 1 });
  const traceFile = f.str("trace");
  const trace =
    traceFile !== undefined
      ? parseTrace(readFileSync(traceFile, "utf8"), duration)
      : shapedTrace({ baseRate: f.num("base-rate", 0.1, pos), stepRate: f.num("step-rate", 0.3, pos), burstRate: f.num("burst-rate", 0.6, pos), durationS: duration ?? (quick ? 90 : 300) });
  const policies = (f.str("policies") ?? POLICIES.join(",")).split(",").map((p) => {
    if (!(POLICIES as readonly string[]).includes(p)) throw new Error(`--policies: unknown policy "${p}" (policies: ${POLICIES.join(", ")})`);
    return p as PolicyName;
  });
  const bounds = (side: string, min: number, max: number): { minReplicas: number; maxReplicas: number } => {
    const b = { minReplicas: f.num(`min-${side}`, min, { integer: true, min: 0 }), maxReplicas: f.num(`max-${side}`, max, { integer: true, min: 1 }) };
    if (b.minReplicas > b.maxReplicas) throw new Error(`--min-${side} (${b.minReplicas}) exceeds --max-${side} (${b.maxReplicas})`);
    return b;
  };
  const stabilizationS = f.num("stabilization-s", quick ? 20 : 30, { min: 0 });
  const runnerConcurrency = f.num("runner-concurrency", 1, { integer: true, min: 1 });
  const engineTarget = f.num("engine-target", 0.75, { min: 0.01 });
  if (engineTarget > 1) throw new Error(`--engine-target is a share of an engine's sequences (0..1], got ${engineTarget}`);
  const json = f.str("json");
  return {
    trace,
    ...(traceFile !== undefined ? { traceFile } : {}),
    seed: f.num("seed", 1, { integer: true }),
    policies,
    scale: {
      engines: bounds("engines", 1, quick ? 2 : 3),
      runners: bounds("runners", 1, 4),
      runnerConcurrency,
      sloTaskP90Ms: f.num("slo-task-p90-ms", 20_000, { min: 1 }),
      stabilizationS,
      idleS: f.num("idle-s", stabilizationS, { min: 0 }),
      engineTarget,
    },
    run: {
      modelPreset: f.str("model-preset") ?? "bench",
      sequences: f.num("sequences", 4, { integer: true, min: 1 }),
      runnerConcurrency,
      tickMs: f.num("tick-ms", 2000, { integer: true, min: 100 }),
      drainGraceMs: f.num("drain-grace-ms", 10_000, { integer: true, min: 0 }),
      // One store sequence per engine keeps the one app's shared prefix, so the router can warm a new engine with it.
      prefixStore: f.num("prefix-store", 1, { integer: true, min: 0 }),
      patienceMs: f.num("patience-ms", 120_000, { integer: true, min: 1000 }),
      task: { calls: f.num("calls", 3, { integer: true, min: 0 }), toolMs: f.num("tool-ms", 2000, { integer: true, min: 0 }), thinkTokens: f.num("think-tokens", 16, { integer: true, min: 0 }) },
    },
    quick,
    ...(json !== undefined ? { json } : {}),
  };
}

function configJson(c: AutoscaleConfig, arrivals: number): Record<string, unknown> {
  return {
    trace: c.trace.points.map((p) => ({ at_s: p.atS, rate: p.rate })),
    ...(c.traceFile !== undefined ? { trace_file: c.traceFile } : {}),
    duration_s: c.trace.durationS,
    tasks: arrivals,
    seed: c.seed,
    policies: c.policies,
    slo_task_p90_ms: c.scale.sloTaskP90Ms,
    engines: c.scale.engines,
    runners: c.scale.runners,
    runner_concurrency: c.scale.runnerConcurrency,
    sequences_per_engine: c.run.sequences,
    stabilization_s: c.scale.stabilizationS,
    idle_s: c.scale.idleS,
    engine_only_target: c.scale.engineTarget,
    tick_ms: c.run.tickMs,
    drain_grace_ms: c.run.drainGraceMs,
    prefix_store: c.run.prefixStore,
    client_patience_ms: c.run.patienceMs,
    calls_per_task: c.run.task.calls,
    tool_ms: c.run.task.toolMs,
    think_tokens: c.run.task.thinkTokens,
    model_preset: c.run.modelPreset,
    threads_per_engine: 1,
    quick: c.quick,
  };
}

export async function run(argv: string[]): Promise<void> {
  const config = parseConfig(argv);
  const started = performance.now();
  const arrivals = traceArrivals(config.trace, config.seed);
  const s = config.scale;
  console.log("Autoscale benchmark — static max vs engine-only (queue depth, tools at min) vs the joint scaler, same trace and seed, real processes.");
  console.log(
    `Trace: ${config.trace.points.map((p) => `${p.rate}/s from ${p.atS} s`).join(", ")}; ${config.trace.durationS} s, ${arrivals.length} tasks, seed ${config.seed}.\n` +
      `Tasks: ${config.run.task.calls} chained tool calls of ${config.run.task.toolMs} ms, ${config.run.task.thinkTokens} tokens before each; SLO task p90 ${s.sloTaskP90Ms} ms.\n` +
      `Pools: engines ${s.engines.minReplicas}..${s.engines.maxReplicas} (${config.run.sequences} sequences, model preset ${config.run.modelPreset}, one thread), ` +
      `runners ${s.runners.minReplicas}..${s.runners.maxReplicas} (${s.runnerConcurrency} call(s) each); scaler tick ${config.run.tickMs} ms, scale-down window ${s.stabilizationS} s.`,
  );
  const runs: PolicyRun[] = [];
  for (const name of config.policies) runs.push(await runPolicy(policyOf(name, s), config.run, arrivals, (line) => console.log(line)));

  const follower = { calls: config.run.task.calls, toolMs: config.run.task.toolMs, sequencesPerEngine: config.run.sequences, runnerConcurrency: s.runnerConcurrency, engines: s.engines, runners: s.runners, holdMs: s.stabilizationS * 1000 };
  const results = withCost(runs.map((r) => summarize(r, s.sloTaskP90Ms, follower)));
  console.log(`\n| policy | SLO attainment | task p50 / p90 ms | replica-s engines | replica-s tools | cost vs static | follower's replica-s engines / tools (vs static; held) | scale decisions | cold starts (p50 ms) | completed |`);
  console.log(`| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |`);
  for (const r of results) {
    console.log(
      `| ${r.policy} | ${(r.slo_attainment * 100).toFixed(1)}% | ${r.task_p50_ms} / ${r.task_p90_ms} | ${r.replica_seconds_engines} | ${r.replica_seconds_tools} | ${r.cost_vs_static ?? "-"} | ${r.follower_replica_seconds_engines} / ${r.follower_replica_seconds_tools} (${r.follower_cost_vs_static ?? "-"}; ${r.follower_held_cost_vs_static ?? "-"}) | ${r.scale_decisions} | ${r.cold_starts}${r.cold_start_p50_ms === null ? "" : ` (${r.cold_start_p50_ms})`} | ${r.completed}/${r.tasks} |`,
    );
  }
  for (const r of runs) console.log(`Where ${r.policy}'s task time went, ms (median): ${describeParts(medianParts(r.tasks))}.`);
  for (const r of runs) {
    const misses = describeMisses(r.tasks, s.sloTaskP90Ms);
    if (misses.length > 0 && misses.length <= 20) console.log(`${r.policy}'s tasks over the SLO:\n${misses.join("\n")}`);
    else if (misses.length > 20) console.log(`${r.policy}: ${misses.length} tasks over the SLO (not listed).`);
  }
  console.log(`SLO attainment = tasks completed within ${s.sloTaskP90Ms} ms of their arrival / all tasks. Replica-seconds count each process from its start to its exit (loading and draining included).`);
  console.log(
    `The follower is the cost floor: a clairvoyant scaler that sizes each side, every ${CALL_RATE_WINDOW_MS / 1000} s slice, to the work the policy's tasks did in it at the joint targets ` +
      `(runners at ${TOOL_TARGET_UTILISATION * 100}% of their slots, engines at ${ENGINE_SEQUENCE_TARGET * 100}% of their sequences), with no start-up time and no scale-down hold; ` +
      `"held" is the same follower holding each side through the ${s.stabilizationS} s scale-down window, the floor with the window.`,
  );
  const targets = checkTargets(results);
  for (const c of targets) console.log(`Target: ${c.target}: ${c.met ? "met" : "MISSED"} (${c.measured}).`);
  console.log(`Total ${((performance.now() - started) / 1000).toFixed(0)} s.`);

  if (config.json !== undefined) {
    const out = {
      results,
      config: configJson(config, arrivals.length),
      targets,
      runs: runs.map((r) => ({
        policy: r.policy,
        end_ms: Math.round(r.endMs),
        replicas_engines: r.engineSteps.map((x) => ({ at_ms: Math.round(x.atMs), replicas: x.replicas })),
        replicas_tools: r.runnerSteps.map((x) => ({ at_ms: Math.round(x.atMs), replicas: x.replicas })),
        decisions: r.decisions.map((d) => ({ at_ms: d.atMs, reason: d.reason })),
        cold_starts: r.coldStarts.map((c) => ({ side: c.side, id: c.id, at_ms: c.atMs, ready_ms: c.readyMs ?? null, ...(c.error !== undefined ? { error: c.error } : {}) })),
        prefix_warms: r.prefixWarms ?? {},
        ticks: r.ticks.map((t) => ({ at_ms: t.atMs, engines: t.engines, runners: t.runners, queued_sessions: t.queuedSessions, active_sessions: t.activeSessions, calls_pending: t.callsPending, calls_running: t.callsRunning, calls_delivered: t.callsDelivered, wait_p90_ms: t.waitP90Ms })),
        tasks: r.tasks.map((x) => ({ at_ms: x.atMs, ok: x.ok, task_ms: x.taskMs === undefined ? null : Math.round(x.taskMs), retries: x.retries, ...(x.parts !== undefined ? { parts: partsJson(x.parts) } : {}), ...(x.error !== undefined ? { error: x.error } : {}) })),
      })),
    };
    mkdirSync(dirname(config.json), { recursive: true });
    writeFileSync(config.json, JSON.stringify(out, null, 2) + "\n");
    const svg = config.json.replace(/\.json$/, "") + ".svg";
    writeFileSync(svg, await renderSvg(chartSpec(runs, s.sloTaskP90Ms)));
    console.log(`wrote ${config.json} and ${svg}`);
  }
}
