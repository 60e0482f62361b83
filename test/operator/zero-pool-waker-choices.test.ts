/**
 * Which pools the zero-pool waker looks at and which apps it queues, with the
 * informers' lists and the live figures given (the real NATS path is
 * zero-pool-wake.test.ts): only builtin-mode pools at zero that an app uses
 * are read; one with work waiting queues each app using it; nothing is read
 * while the autoscaler does not run here (a standby operator).
 */
import t from "tap";
import { createLogger } from "../../common/src/index.js";
import type { AgentApp, EnginePool, ToolPool } from "../../operator/src/api/index.js";
import { unobservedLiveState, type LiveState } from "../../operator/src/controllers/index.js";
import { ZeroPoolWaker } from "../../operator/src/controllers/zero-pool-waker.js";
import { createOperatorMetrics } from "../../operator/src/metrics.js";
import type { Informer } from "../../operator/src/runtime/index.js";

const NS = "team";
const listOf = <T extends { metadata: { namespace?: string } }>(items: T[]): Informer<T> => ({ list: (ns?: string) => items.filter((i) => ns === undefined || i.metadata.namespace === ns) }) as unknown as Informer<T>;
const app = (name: string, engine: string, tools: string[]): AgentApp => ({ apiVersion: "interlace.dev/v1alpha1", kind: "AgentApp", metadata: { name, namespace: NS }, spec: { enginePool: { name: engine }, toolPools: tools.map((n) => ({ name: n })) } });
const builtinAtZero = { minReplicas: 0, maxReplicas: 2 };
const toolPool = (name: string, replicas: number, autoscaling?: ToolPool["spec"]["autoscaling"]): ToolPool => ({
  apiVersion: "interlace.dev/v1alpha1",
  kind: "ToolPool",
  metadata: { name, namespace: NS },
  spec: { replicas, tools: [], ...(autoscaling ? { autoscaling } : {}) },
});
const enginePool = (name: string, replicas: number, autoscaling?: EnginePool["spec"]["autoscaling"]): EnginePool => ({
  apiVersion: "interlace.dev/v1alpha1",
  kind: "EnginePool",
  metadata: { name, namespace: NS },
  spec: { model: { path: "/m.gguf" }, replicas, runtime: { backend: "llama-cpp" }, ...(autoscaling ? { autoscaling } : {}) },
});

function waker(live: Partial<LiveState>, running = true): { waker: ZeroPoolWaker; queued: string[]; reads: string[] } {
  const queued: string[] = [];
  const reads: string[] = [];
  const state: LiveState = {
    ...unobservedLiveState,
    observed: true,
    toolPoolSignal: async (ns, pool) => {
      reads.push(`tools ${pool}`);
      return (await live.toolPoolSignal?.(ns, pool)) ?? null;
    },
    heldRequests: async (ns, pool) => {
      reads.push(`engines ${pool}`);
      return (await live.heldRequests?.(ns, pool)) ?? 0;
    },
  };
  const w = new ZeroPoolWaker({
    live: state,
    apps: listOf([app("a", "gen", ["sleepy", "external", "awake"]), app("b", "gen", ["sleepy"]), app("c", "other", [])]),
    enginePools: listOf([enginePool("gen", 0, builtinAtZero), enginePool("other", 1, builtinAtZero), enginePool("unused", 0, builtinAtZero)]),
    toolPools: listOf([toolPool("sleepy", 0, builtinAtZero), toolPool("external", 0, { ...builtinAtZero, mode: "external" }), toolPool("awake", 2, builtinAtZero), toolPool("manual", 0), toolPool("unused", 0, builtinAtZero)]),
    autoscaler: { enqueue: (k) => void queued.push(k), isRunning: () => running },
    checkMs: 1_000,
    metrics: createOperatorMetrics().autoscaler,
    log: createLogger("test", "silent"),
  });
  return { waker: w, queued, reads };
}

t.test("reads only builtin pools at zero that an app uses; queues every app of one with work waiting", async (t) => {
  const { waker: w, queued, reads } = waker({ toolPoolSignal: async (_ns, pool) => ({ pending: pool === "sleepy" ? 1 : 0, ackPending: 0 }), heldRequests: async () => 0 });
  t.same(await w.check(), [`${NS}/a`, `${NS}/b`], "both apps using the sleepy pool");
  t.same(queued, [`${NS}/a`, `${NS}/b`]);
  t.same(reads, ["tools sleepy", "engines gen"], "not the external, awake, unscaled or unused pools");
});

t.test("requests held for an EnginePool at zero queue its apps", async (t) => {
  const { waker: w } = waker({ toolPoolSignal: async () => ({ pending: 0, ackPending: 0 }), heldRequests: async (_ns, pool) => (pool === "gen" ? 3 : 0) });
  t.same(await w.check(), [`${NS}/a`, `${NS}/b`]);
});

t.test("no work waiting: nothing queued", async (t) => {
  const { waker: w, queued } = waker({ toolPoolSignal: async () => ({ pending: 0, ackPending: 2 }), heldRequests: async () => 0 });
  t.same(await w.check(), []);
  t.same(queued, []);
});

t.test("a standby operator (the autoscaler does not run here) reads nothing", async (t) => {
  const { waker: w, reads } = waker({ toolPoolSignal: async () => ({ pending: 5, ackPending: 0 }) }, false);
  t.same(await w.check(), []);
  t.same(reads, []);
});
