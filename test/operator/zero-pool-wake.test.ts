/**
 * Pools at zero woken between the autoscaler's ticks, on a real etcd +
 * kube-apiserver and a real nats-server. The operator ticks every 10 min
 * here, so only its wake check (every 200 ms) can wake a pool within the
 * test: a call stored on a builtin ToolPool at zero, and a request a router
 * holds for a builtin EnginePool at zero (its presence in `interlace-routers`,
 * as a router writes it), each get the app's autoscaler pass at once, which
 * writes replicas 1 with the `woke` reason. A call on an external-mode pool
 * at zero wakes nothing.
 */
import t from "tap";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { AgentAppKind, EnginePoolKind, ToolPoolKind, type AgentApp, type EnginePool, type ToolPool } from "../../operator/src/api/index.js";
import { encodeCall, interruptSubject, openRoutersBucket, poolStream, PROTOCOL_VERSION, toolSubject, type PoolRef, type RouterPresence } from "../../common/src/protocol/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { startOperatorStack, waitFor } from "./helpers.js";

const NS = "wakes";
const nats = await startNatsServer(t);
const nc = await connect({ servers: nats.url });
t.teardown(() => nc.close());
const jsm = await jetstreamManager(nc);
const js = jetstream(nc);
const { admin, metricsText } = await startOperatorStack(t, NS, [
  "--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--nats-url", nats.url,
  "--autoscale-interval-ms", "600000", "--wake-check-ms", "200",
]);

const atZero = { minReplicas: 0, maxReplicas: 3, scaleDownStabilizationSeconds: 3600, idleSecondsBeforeZero: 3600 };
const toolPool = (name: string, autoscaling: ToolPool["spec"]["autoscaling"]): ToolPool => ({
  apiVersion: "interlace.dev/v1alpha1",
  kind: "ToolPool",
  metadata: { name, namespace: NS },
  spec: { replicas: 0, concurrency: 2, tools: [{ name: "lookup", description: "Looks a word up.", parameters: { type: "object" }, builtin: { name: "echo" } }], ...(autoscaling ? { autoscaling } : {}) },
});
await admin.create<EnginePool>(EnginePoolKind, {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "EnginePool",
  metadata: { name: "gen", namespace: NS },
  spec: { model: { path: "/models/m.gguf" }, replicas: 0, runtime: { backend: "llama-cpp" }, autoscaling: atZero },
});
await admin.create<ToolPool>(ToolPoolKind, toolPool("sleepy", atZero));
await admin.create<ToolPool>(ToolPoolKind, toolPool("manual", { ...atZero, mode: "external" }));
await admin.create<AgentApp>(AgentAppKind, {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "AgentApp",
  metadata: { name: "asker", namespace: NS },
  spec: { enginePool: { name: "gen" }, toolPools: [{ name: "sleepy" }, { name: "manual" }] },
});

/** One call on the pool's subject, as an engine holding it for a runner publishes it. */
async function storeCall(pool: PoolRef, id: string): Promise<void> {
  const now = Date.now();
  const call = encodeCall(
    { v: PROTOCOL_VERSION, callId: id, sessionId: `s-${id}`, tool: "lookup", arguments: {}, deadline: now + 60_000, replyTo: interruptSubject({ namespace: NS, pod: "gen-0" }, `s-${id}`), publishedAt: now, startBy: now + 60_000 },
    `gen-0:s-${id}:${id}`,
  );
  await js.publish(toolSubject(pool, "lookup"), call.data, { headers: call.headers, msgID: call.msgID! });
}

const replicas = async (kind: typeof ToolPoolKind | typeof EnginePoolKind, name: string): Promise<number | undefined> => (await admin.get<ToolPool | EnginePool>(kind, NS, name))?.spec.replicas;
const earlyWakes = async (kind: string, pool: string): Promise<number> => {
  const m = new RegExp(`interlace_autoscaler_early_wakes_total\\{kind="${kind}",pool_namespace="${NS}",pool="${pool}"\\} (\\d+)`).exec(await metricsText());
  return m === null ? 0 : Number(m[1]);
};

// The first pass (at start) keeps every pool at zero, and the operator makes the zero-minimum pools' streams.
await waitFor("the first pass", async () => {
  const text = await metricsText();
  return /interlace_autoscaler_desired_replicas\{kind="ToolPool",pool_namespace="wakes",pool="sleepy"\} 0/.test(text) && /interlace_autoscaler_desired_replicas\{kind="EnginePool",pool_namespace="wakes",pool="gen"\} 0/.test(text);
});
await waitFor("the pools' call streams", async () => (await jsm.streams.info(poolStream({ namespace: NS, name: "sleepy" }))) && (await jsm.streams.info(poolStream({ namespace: NS, name: "manual" }))));
// Every write to the app or its pools (their status) runs a pass too: let them settle, so each wake below is the wake check's doing.
const passes = async (): Promise<string> => ((await metricsText()).match(/^interlace_operator_reconcile_total\{controller="autoscaler".*$/gm) ?? []).join("\n");
const settled = (): Promise<true> =>
  waitFor("the autoscaler's passes to settle", async () => {
    const before = await passes();
    await new Promise((r) => setTimeout(r, 1_500));
    return before === (await passes());
  });

t.test("a call stored on a builtin ToolPool at zero wakes it without waiting for the tick; an external one stays", async (t) => {
  await settled();
  await storeCall({ namespace: NS, name: "manual" }, "c-manual");
  await storeCall({ namespace: NS, name: "sleepy" }, "c-sleepy");
  const woken = await waitFor("the ToolPool woken", async () => {
    const p = await admin.get<ToolPool>(ToolPoolKind, NS, "sleepy");
    return p?.spec.replicas === 1 && p.status?.autoscaling !== undefined ? p : undefined;
  }, 20_000);
  t.match(woken.status?.autoscaling, { desiredReplicas: 1, lastDirection: "up", lastReason: "woke ToolPool sleepy 0→1: 1 call pending, 0 running (2 per runner)" });
  t.ok((await earlyWakes("ToolPool", "sleepy")) >= 1, "by a pass between ticks");
  t.equal(await replicas(ToolPoolKind, "manual"), 0, "external mode: left at zero");
  t.equal(await earlyWakes("ToolPool", "manual"), 0, "and no pass was run for it");
});

t.test("a request a router holds for a builtin EnginePool at zero wakes it without waiting for the tick", async (t) => {
  await settled();
  const routers = await openRoutersBucket(nc);
  const presence: RouterPresence = { router: "router-a", at: Date.now(), apps: {}, held: { [`${NS}/gen`]: 2 } };
  await routers.put("router-a", JSON.stringify(presence));
  const woken = await waitFor("the EnginePool woken", async () => {
    const p = await admin.get<EnginePool>(EnginePoolKind, NS, "gen");
    return p?.spec.replicas === 1 && p.status?.autoscaling !== undefined ? p : undefined;
  }, 20_000);
  t.match(woken.status?.autoscaling, { desiredReplicas: 1, lastDirection: "up", lastReason: /^woke EnginePool gen 0→1: 2 requests held/ });
  t.ok((await earlyWakes("EnginePool", "gen")) >= 1, "by a pass between ticks");
});
