/**
 * The pressure check between the autoscaler's ticks, on recorded signal
 * traces (test/fixtures/autoscaling): the real AutoscalerReconciler and
 * PressureCheck, the live state serving the trace's sample at the simulated
 * time, the informers holding the pools whose spec.replicas the passes write.
 * Passes run at the cluster's 10 s tick and whenever the check queues the
 * app; the check runs at each sample (2 s apart). A scale-up the decision
 * makes between ticks (the headroom rule's engine as the fourth sequence is
 * taken; runners for calls whose forecast wait is over the budget) is made at
 * that sample, not at the next tick; with an engine already starting, or
 * nothing to add, the check queues nothing; scale-downs wait for the tick.
 */
import t from "tap";
import { autoscalingTrace as trace, type AutoscalingTrace as Trace } from "../helpers/autoscaling-trace.js";
import { createLogger } from "../../common/src/index.js";
import type { AgentApp, EnginePool, ToolPool } from "../../operator/src/api/index.js";
import type { SignalSample } from "../../operator/src/autoscaling/index.js";
import { AutoscalerReconciler, PressureCheck, unobservedLiveState, type LiveState, type ReconcilerContext } from "../../operator/src/controllers/index.js";
import { createOperatorMetrics } from "../../operator/src/metrics.js";
import type { Informer, KubeClient } from "../../operator/src/runtime/index.js";

const NS = "team";
const TICK_MS = 10_000;


const informer = <T extends { metadata: { name?: string; namespace?: string } }>(items: T[]): Informer<T> =>
  ({ list: () => items, get: (ns: string, name: string) => items.find((i) => i.metadata.namespace === ns && i.metadata.name === name) }) as unknown as Informer<T>;

interface Run {
  /** Scale changes: seconds since the trace's start, pool, from, to. */
  changes: [number, string, number, number][];
  /** Seconds at which the check queued the app. */
  queuedAt: number[];
}

/** Replays `tr` through the controller's passes (every 10 s, and when queued) with the pressure check at every sample, or without it. */
async function replay(tr: Trace, withCheck: boolean): Promise<Run> {
  const t0 = tr.samples[0]!.at;
  let clock = t0;
  const sampleNow = (): SignalSample => [...tr.samples].reverse().find((s) => s.at <= clock) ?? tr.samples[0]!;
  const engine: EnginePool | undefined =
    tr.enginePool === undefined
      ? undefined
      : { apiVersion: "interlace.dev/v1alpha1", kind: "EnginePool", metadata: { name: tr.enginePool.name, namespace: NS }, spec: { model: { path: "/m.gguf" }, runtime: { backend: "llama-cpp" }, replicas: tr.enginePool.replicas, ...(tr.enginePool.autoscaling ? { autoscaling: tr.enginePool.autoscaling } : {}) } };
  const tools: ToolPool[] = tr.toolPools.map((p) => ({ apiVersion: "interlace.dev/v1alpha1", kind: "ToolPool", metadata: { name: p.name, namespace: NS }, spec: { replicas: p.replicas, concurrency: p.concurrency, tools: [], ...(p.autoscaling ? { autoscaling: p.autoscaling } : {}) } }));
  const app: AgentApp = { apiVersion: "interlace.dev/v1alpha1", kind: "AgentApp", metadata: { name: "app", namespace: NS }, spec: { enginePool: { name: tr.enginePool?.name ?? "none" }, toolPools: tools.map((p) => ({ name: p.metadata.name ?? "" })), ...(tr.slo ? { slo: tr.slo } : {}) } };
  const live: LiveState = {
    ...unobservedLiveState,
    observed: true,
    engineSignals: async () => sampleNow().engines,
    heldRequests: async () => sampleNow().heldRequests ?? 0,
    toolPoolSignal: async (_ns, pool) => sampleNow().tools[pool] ?? null,
  };
  const run: Run = { changes: [], queuedAt: [] };
  const seconds = (): number => Math.round((clock - t0) / 100) / 10;
  const client = {
    mergePatch: async (kind: { kind: string }, _ns: string, name: string, patch: { spec: { replicas: number } }) => {
      const pool = kind.kind === "EnginePool" ? engine : tools.find((p) => p.metadata.name === name);
      run.changes.push([seconds(), name, pool!.spec.replicas ?? 1, patch.spec.replicas]);
      pool!.spec.replicas = patch.spec.replicas;
      return pool;
    },
    apply: async () => ({}),
  } as unknown as KubeClient;
  const log = createLogger("test", "silent");
  const ctx: ReconcilerContext = { client, recorder: { record: async () => {} } as unknown as ReconcilerContext["recorder"], build: {} as ReconcilerContext["build"], log, now: () => new Date(clock), live };
  const metrics = createOperatorMetrics().autoscaler;
  const apps = informer([app]);
  const enginePools = informer(engine ? [engine] : []);
  const toolPools = informer(tools);
  const scaler = new AutoscalerReconciler(ctx, apps, enginePools, toolPools, metrics, TICK_MS);
  let queued = false;
  const check = new PressureCheck({ apps, enginePools, toolPools, autoscaler: { enqueue: () => void (queued = true), isRunning: () => true }, pressure: (ns, name) => scaler.pressure(ns, name), checkMs: 2_000, metrics, log });

  let nextTick = t0;
  for (const s of tr.samples) {
    clock = s.at;
    if (clock >= nextTick) {
      await scaler.reconcile({ namespace: NS, name: "app" });
      nextTick += TICK_MS;
      continue;
    }
    if (!withCheck) continue;
    queued = false;
    if ((await check.check()).length > 0) run.queuedAt.push(seconds());
    // The controller runs the queued pass at once (its tick stays where it was: the requeue is the next pass's).
    if (queued) await scaler.reconcile({ namespace: NS, name: "app" });
  }
  return run;
}

t.test("the headroom rule's engine starts as the fourth sequence is taken, not at the next tick", async (t) => {
  const tr = trace("engine-headroom");
  const ticksOnly = await replay(tr, false);
  t.same(ticksOnly.changes, [[10, "engines", 1, 2]], "ticks only: the engine waits for the 10 s tick");
  const checked = await replay(tr, true);
  t.same(checked.changes, [[8, "engines", 1, 2]], "with the check: at the 8 s sample, where the decision asks for it");
  t.same(checked.queuedAt, [8], "queued once: with the second engine starting (replicas above ready), the decision adds none, so the check queues nothing");
});

t.test("runners for calls whose forecast wait is over the budget start between ticks", async (t) => {
  const tr = trace("forecast-pending-wait");
  const ticksOnly = await replay(tr, false);
  const checked = await replay(tr, true);
  t.same(ticksOnly.changes, [[20.1, "tools", 1, 3]], "ticks only: the step's runners at the 20 s tick, the burst's pending calls (56.4 s) not before the 60 s tick");
  t.same(
    checked.changes,
    [
      [14.1, "tools", 1, 2],
      [20.1, "tools", 2, 3],
      [56.4, "tools", 3, 6],
    ],
    "with the check: as the bench's 2 s ticks decided (the first call at 14.1 s, the burst's forecast wait over the budget at 56.4 s)",
  );
  t.same(checked.queuedAt, [14.1, 56.4], "queued at those samples only (20.1 s is a tick)");
});

t.test("a standby operator (the autoscaler does not run here) looks at nothing", async (t) => {
  let looks = 0;
  const none = informer<AgentApp>([{ apiVersion: "interlace.dev/v1alpha1", kind: "AgentApp", metadata: { name: "app", namespace: NS }, spec: { enginePool: { name: "e" } } }]);
  const engines = informer<EnginePool>([{ apiVersion: "interlace.dev/v1alpha1", kind: "EnginePool", metadata: { name: "e", namespace: NS }, spec: { model: { path: "/m.gguf" }, runtime: { backend: "llama-cpp" }, replicas: 1, autoscaling: { maxReplicas: 2 } } }]);
  const check = (running: boolean): PressureCheck =>
    new PressureCheck({
      apps: none,
      enginePools: engines,
      toolPools: informer<ToolPool>([]),
      autoscaler: { enqueue: () => {}, isRunning: () => running },
      pressure: async () => {
        looks++;
        return [];
      },
      checkMs: 2_000,
      metrics: createOperatorMetrics().autoscaler,
      log: createLogger("test", "silent"),
    });
  t.same(await check(false).check(), []);
  t.equal(looks, 0);
  await check(true).check();
  t.equal(looks, 1, "the leader looks at the app with a pool with replicas");
});

t.test("an app with a pool awake and its EnginePool at zero: the check leaves the wake to the zero-pool waker", async (t) => {
  let held = 0;
  const clock = Date.now();
  const engine: EnginePool = { apiVersion: "interlace.dev/v1alpha1", kind: "EnginePool", metadata: { name: "gen", namespace: NS }, spec: { model: { path: "/m.gguf" }, runtime: { backend: "llama-cpp" }, replicas: 0, autoscaling: { minReplicas: 0, maxReplicas: 3 } } };
  const tool: ToolPool = { apiVersion: "interlace.dev/v1alpha1", kind: "ToolPool", metadata: { name: "tools", namespace: NS }, spec: { replicas: 1, concurrency: 2, tools: [], autoscaling: { minReplicas: 0, maxReplicas: 3 } } };
  const apps = informer<AgentApp>([{ apiVersion: "interlace.dev/v1alpha1", kind: "AgentApp", metadata: { name: "app", namespace: NS }, spec: { enginePool: { name: "gen" }, toolPools: [{ name: "tools" }] } }]);
  const live: LiveState = { ...unobservedLiveState, observed: true, engineSignals: async () => [], heldRequests: async () => held, toolPoolSignal: async () => ({ pending: 0, ackPending: 0 }) };
  const client = { mergePatch: async () => ({}), apply: async () => ({}) } as unknown as KubeClient;
  const log = createLogger("test", "silent");
  const ctx: ReconcilerContext = { client, recorder: { record: async () => {} } as unknown as ReconcilerContext["recorder"], build: {} as ReconcilerContext["build"], log, now: () => new Date(clock), live };
  const metrics = createOperatorMetrics().autoscaler;
  const scaler = new AutoscalerReconciler(ctx, apps, informer([engine]), informer([tool]), metrics, TICK_MS);
  await scaler.reconcile({ namespace: NS, name: "app" });
  held = 2;
  t.match(await scaler.pressure(NS, "app"), [{ kind: "EnginePool", name: "gen", current: 0, desired: 1, direction: "up" }], "the decision wakes the EnginePool for the requests held");
  let queued = 0;
  const check = new PressureCheck({ apps, enginePools: informer([engine]), toolPools: informer([tool]), autoscaler: { enqueue: () => void queued++, isRunning: () => true }, pressure: (ns, name) => scaler.pressure(ns, name), checkMs: 2_000, metrics, log });
  t.same(await check.check(), [], "the pressure check queues no pass for it");
  t.equal(queued, 0);
  t.equal((await metrics.pressurePasses.get()).values.length, 0, "nor counts one: the waker's early-wake counter is the one that says a pool at zero was woken between ticks");
});
