/**
 * @module One policy's run of the autoscale bench on a stack of its own: a
 * nats-server, a real router, engine pods and tool runners as processes
 * (warmed to the policy's initial counts before the trace starts), the
 * trace's tasks sent through the router, and a scaler loop that each tick
 * samples the live signals the operator's controller samples — engine
 * heartbeats and the tool pool's JetStream consumer and runner wait, read
 * by the operator's own {@link NatsLiveState} — asks the policy for counts
 * and starts or stops processes to match.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { createLogger } from "../../common/src/index.js";
import { appKey, openAppsBucket, withAppDefaults } from "../../common/src/protocol/index.js";
import { NatsServer } from "../../hack/nats.js";
import { NatsLiveState } from "../../operator/src/controllers/live-state.js";
import type { SignalSample } from "../../operator/src/autoscaling/index.js";
import { engineLoad } from "../../operator/src/autoscaling/index.js";
import { routerOptions } from "../../router/src/config.js";
import { startRouter } from "../../router/src/index.js";
import { startFleet, type ColdStart } from "./fleet.js";
import { ENGINE_POOL_NAME, TOOL_POOL_NAME, type Policy } from "./policies.js";
import type { ReplicaStep } from "./replica-seconds.js";
import { runTask, taskBody, type TaskOptions, type TaskResult } from "./task-client.js";

export const BENCH_NS = "bench";
const APP = "agent";

export interface RunSetup {
  modelPreset: string;
  sequences: number;
  runnerConcurrency: number;
  tickMs: number;
  drainGraceMs: number;
  /** Prefix-store sequences per engine (the engines' `--prefix-store`; 0: off, so the router cannot warm an engine). */
  prefixStore: number;
  patienceMs: number;
  task: TaskOptions;
}

/** One scaler tick, for the chart and the JSON. */
export interface Tick {
  atMs: number;
  engines: number;
  runners: number;
  queuedSessions: number;
  activeSessions: number;
  callsPending: number;
  callsRunning: number;
  /** The consumer's delivered counter and the runners' p90 wait, as sampled: with the counts above, the tool side's signals, for recorded-trace fixtures (absent: not read). */
  callsDelivered?: number;
  waitP90Ms?: number;
}

export interface Decision {
  atMs: number;
  reason: string;
}

export interface PolicyRun {
  policy: string;
  tasks: TaskResult[];
  /** The trace's start to its last task's end, ms. */
  endMs: number;
  engineSteps: readonly ReplicaStep[];
  runnerSteps: readonly ReplicaStep[];
  engineReplicaSeconds: number;
  runnerReplicaSeconds: number;
  decisions: Decision[];
  coldStarts: ColdStart[];
  ticks: Tick[];
  /** The router's hot-prefix warms by outcome (warmed, held, busy, refused, failed; absent: none asked). */
  prefixWarms?: Record<string, number>;
}

const SLEEP_TOOL = {
  name: "sleep",
  description: "Waits ms milliseconds, then returns result.",
  parameters: { type: "object", properties: { ms: { type: "integer", minimum: 0 }, result: { type: "string" } }, required: ["ms"] },
  pool: { namespace: BENCH_NS, name: TOOL_POOL_NAME },
};

export async function runPolicy(policy: Policy, setup: RunSetup, arrivalsMs: readonly number[], log: (line: string) => void): Promise<PolicyRun> {
  const nats = await NatsServer.start();
  const nc = await connect({ servers: nats.url });
  const logger = createLogger("bench-autoscale", "warn");
  const live = new NatsLiveState(nats.url, logger);
  let t0 = performance.now();
  const clock = (): number => performance.now() - t0;
  const scratch = mkdtempSync(join(tmpdir(), "interlace-autoscale-"));
  const fleet = startFleet({
    costModelFile: join(scratch, "kv-cost-model.json"),
    natsUrl: nats.url,
    enginePool: `${BENCH_NS}/${ENGINE_POOL_NAME}`,
    modelPreset: setup.modelPreset,
    sequences: setup.sequences,
    contextSize: 2048,
    drainGraceMs: setup.drainGraceMs,
    prefixStore: setup.prefixStore,
    runnerConfig: { namespace: BENCH_NS, pool: TOOL_POOL_NAME, concurrency: setup.runnerConcurrency, tools: [{ ...SLEEP_TOOL, implementation: { type: "builtin" } }] },
    clock,
  });
  const router = await startRouter(
    routerOptions({ natsUrl: nats.url, routerId: `bench-${policy.name}`, upstreamTimeoutMs: 120_000, engineTtlMs: 15_000, coldStartHoldMs: setup.patienceMs, logLevel: "warn" }),
    logger,
  );
  try {
    const apps = await openAppsBucket(nc);
    const app = withAppDefaults({ namespace: BENCH_NS, name: APP, enginePool: { name: ENGINE_POOL_NAME }, systemPrompt: "You are a bench agent. Use the tools.", maxTokens: 512, tools: [SLEEP_TOOL] });
    await apps.put(appKey(BENCH_NS, APP), JSON.stringify(app));
    const warmStart = performance.now();
    await fleet.runners.warm(policy.initial.runners, true);
    await fleet.engines.warm(policy.initial.engines);
    const deadline = Date.now() + 60_000;
    while (router.engines.loads(BENCH_NS, ENGINE_POOL_NAME).length < policy.initial.engines || router.apps.get(BENCH_NS, APP) === undefined) {
      if (Date.now() > deadline) throw new Error("the router does not see every engine and the app");
      await new Promise((r) => setTimeout(r, 100));
    }
    log(`  ${policy.name}: ${policy.initial.engines} engines and ${policy.initial.runners} runners ready in ${((performance.now() - warmStart) / 1000).toFixed(0)} s; trace starts`);

    // The trace's clock starts now: what was warmed counts from 0.
    t0 = performance.now();
    fleet.engines.timeline.reset(fleet.engines.wanted);
    fleet.runners.timeline.reset(fleet.runners.wanted);
    const decisions: Decision[] = [];
    const ticks: Tick[] = [];
    const window: SignalSample[] = [];
    let stopped = false;
    /** One sample, one decision, applied. */
    async function tick(): Promise<void> {
      const now = Date.now();
      const sample: SignalSample = {
        at: now,
        engines: await live.engineSignals(BENCH_NS, ENGINE_POOL_NAME),
        tools: { [TOOL_POOL_NAME]: (await live.toolPoolSignal(BENCH_NS, TOOL_POOL_NAME)) ?? { pending: 0, ackPending: 0 } },
      };
      window.push(sample);
      const want = policy.decide({ now, window, engines: fleet.engines.wanted, runners: fleet.runners.wanted });
      const atMs = Math.round(clock());
      for (const reason of want.reasons) decisions.push({ atMs, reason });
      fleet.engines.scaleTo(want.engines);
      fleet.runners.scaleTo(want.runners);
      const load = engineLoad(sample.engines);
      const tools = sample.tools[TOOL_POOL_NAME]!;
      ticks.push({ atMs, engines: fleet.engines.wanted, runners: fleet.runners.wanted, queuedSessions: load.queuedSessions, activeSessions: load.activeSessions, callsPending: tools.pending, callsRunning: tools.ackPending, ...(tools.delivered !== undefined ? { callsDelivered: tools.delivered } : {}), ...(tools.waitP90Ms !== undefined ? { waitP90Ms: tools.waitP90Ms } : {}) });
    }
    const scaler = (async () => {
      while (!stopped) {
        try {
          await tick();
        } catch (err) {
          // A missed sample (NATS busy on a loaded machine) skips a tick, as the operator's requeue would.
          log(`    scaler tick failed: ${String(err).slice(0, 200)}`);
        }
        await new Promise((r) => setTimeout(r, setup.tickMs));
      }
    })();

    const url = `http://127.0.0.1:${router.port}/v1/apps/${BENCH_NS}/${APP}/sessions`;
    const pending: Promise<TaskResult>[] = [];
    for (const [n, at] of arrivalsMs.entries()) {
      const wait = at - clock();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(runTask(url, taskBody(n, setup.task), at, setup.patienceMs));
    }
    const tasks = await Promise.all(pending);
    const endMs = clock();
    stopped = true;
    await scaler;
    const ok = tasks.filter((x) => x.ok).length;
    log(`  ${policy.name}: ${ok}/${tasks.length} tasks completed in ${(endMs / 1000).toFixed(0)} s, ${decisions.length} scale decisions`);
    for (const x of tasks.filter((x) => !x.ok).slice(0, 3)) log(`    not completed: ${x.error ?? "?"}`);
    const prefixWarms = Object.fromEntries((await router.metrics.prefixWarms.get()).values.map((v) => [String(v.labels["outcome"]), v.value]));
    if (Object.keys(prefixWarms).length > 0) log(`    prefix warms: ${Object.entries(prefixWarms).map(([k, v]) => `${v} ${k}`).join(", ")}`);
    return {
      policy: policy.name,
      tasks,
      endMs,
      engineSteps: [...fleet.engines.timeline.changes],
      runnerSteps: [...fleet.runners.timeline.changes],
      engineReplicaSeconds: fleet.engines.timeline.replicaSeconds(endMs),
      runnerReplicaSeconds: fleet.runners.timeline.replicaSeconds(endMs),
      decisions,
      coldStarts: [...fleet.engines.coldStarts, ...fleet.runners.coldStarts],
      ticks,
      ...(Object.keys(prefixWarms).length > 0 ? { prefixWarms } : {}),
    };
  } finally {
    await Promise.all([fleet.engines.stopAll(), fleet.runners.stopAll()]);
    await router.close();
    await live.close();
    await nc.close();
    await nats.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}
