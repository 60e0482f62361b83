/**
 * The joint autoscaler on a real etcd + kube-apiserver (the operator under the
 * chart's own ClusterRole) and a real nats-server: a backlog of calls that no
 * runner consumes, published on a ToolPool's JetStream subject, scales that
 * pool up through spec.replicas, with the reason in status.autoscaling, in an
 * Event and in the metrics; a pool in external mode with the same backlog is
 * left alone (its signals are still exported); once the backlog is gone the
 * pool comes back down (stabilization window 0); a real runner's p90 wait
 * reaches the exported signals through its heartbeat, and the calls' arrival
 * rate and mean time through its consumer's counters; an engine heartbeat's
 * TTFT p90 over the app's `slo.ttftP90Ms` scales the EnginePool up.
 */
import t from "tap";
import type { KubernetesObject } from "@kubernetes/client-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { AgentAppKind, EnginePoolKind, ToolPoolKind, type AgentApp, type EnginePool, type ToolPool } from "../../operator/src/api/index.js";
import {
  encodeCall,
  engineKey,
  ensureIntrStream,
  interruptSubject,
  ensurePoolStream,
  openEnginesBucket,
  poolStream,
  PROTOCOL_VERSION,
  toolSubject,
  type EngineHeartbeat,
  type PoolRef,
} from "../../common/src/protocol/index.js";
import { CoreTypes } from "../../operator/src/runtime/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { engineHeartbeat } from "../helpers/engine-heartbeat.js";
import { poolConfig, startRunner } from "../nats/fixtures.js";
import { startOperatorStack, waitFor } from "./helpers.js";

const NS = "scaling";

const nats = await startNatsServer(t);
const nc = await connect({ servers: nats.url });
t.teardown(() => nc.close());
const jsm = await jetstreamManager(nc);
const js = jetstream(nc);

const { admin, metricsText } = await startOperatorStack(t, NS, ["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--nats-url", nats.url, "--autoscale-interval-ms", "200"]);

function toolPool(name: string, autoscaling: ToolPool["spec"]["autoscaling"]): ToolPool {
  return {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "ToolPool",
    metadata: { name, namespace: NS },
    spec: {
      replicas: 1,
      concurrency: 2,
      tools: [{ name: "forecast", description: "Weather forecast.", parameters: { type: "object" }, builtin: { name: "echo" } }],
      ...(autoscaling ? { autoscaling } : {}),
    },
  };
}

let callSeq = 0;
/** Publishes `n` calls of `tool` on the pool's subject (published `agoMs` ago); with no runner they stay pending on its consumer. */
async function backlog(pool: PoolRef, n: number, tool = "forecast", agoMs = 0, args: Record<string, unknown> = { text: "Oslo" }): Promise<void> {
  await ensurePoolStream(jsm, pool, { ackWaitMs: 30_000, maxDeliver: 3 });
  for (let i = 0; i < n; i++) {
    const id = ++callSeq;
    const call = encodeCall(
      { v: PROTOCOL_VERSION, callId: `c${id}`, sessionId: `s${id}`, tool, arguments: args, deadline: Date.now() + 60_000, replyTo: interruptSubject({ namespace: pool.namespace, pod: "engine-0" }, `s${id}`), publishedAt: Date.now() - agoMs },
      `call:engine-0:s${id}:c${id}`,
    );
    await js.publish(toolSubject(pool, tool), call.data, { headers: call.headers, ...(call.msgID !== undefined ? { msgID: call.msgID } : {}) });
  }
}


t.test("a tool backlog scales the builtin ToolPool up; the external one is left alone", async (t) => {
  // The backlog first, so the autoscaler's first look sees all of it.
  await backlog({ namespace: NS, name: "weather" }, 9);
  await backlog({ namespace: NS, name: "maps" }, 9);
  const engine: EnginePool = {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "qwen", namespace: NS },
    spec: { model: { path: "/models/q.gguf" }, replicas: 1, runtime: { backend: "llama-cpp" }, autoscaling: { minReplicas: 1, maxReplicas: 2 } },
  };
  await admin.create(EnginePoolKind, engine);
  await admin.create(ToolPoolKind, toolPool("weather", { minReplicas: 1, maxReplicas: 6, scaleDownStabilizationSeconds: 0 }));
  await admin.create(ToolPoolKind, toolPool("maps", { mode: "external", maxReplicas: 6 }));
  const app: AgentApp = {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "AgentApp",
    metadata: { name: "travel", namespace: NS },
    spec: { enginePool: { name: "qwen" }, toolPools: [{ name: "weather" }, { name: "maps" }], slo: { taskLatencyP90Ms: 8000 } },
  };
  await admin.create(AgentAppKind, app);

  const weather = await waitFor("weather scaled up", async () => {
    const p = await admin.get<ToolPool>(ToolPoolKind, NS, "weather");
    return p?.spec.replicas === 5 && p.status?.autoscaling !== undefined ? p : undefined;
  });
  const reason = "scaled ToolPool weather 1→5: 9 calls pending, 0 running (2 per runner)";
  t.equal(weather.status?.autoscaling?.lastReason, reason, "the reason names the backlog (no runner: no wait measured)");
  t.match(weather.status?.autoscaling, { desiredReplicas: 5, lastDirection: "up" });
  t.ok(weather.metadata.managedFields?.some((f) => f.manager === "interlace-autoscaler" && f.subresource !== "status"), "spec.replicas written under the autoscaler's field manager");

  const event = await waitFor("ScaledUp event", async () => {
    const events = await admin.list<KubernetesObject & { reason?: string; message?: string; type?: string; involvedObject?: { kind?: string; name?: string } }>(CoreTypes.Event, NS);
    return events.items.find((e) => e.reason === "ScaledUp" && e.involvedObject?.kind === "ToolPool" && e.involvedObject.name === "weather");
  });
  t.equal(event.message, reason);
  t.equal(event.type, "Normal");

  // The external pool's backlog reached the autoscaler (it exports it) but drew no decision.
  await waitFor("maps backlog exported", async () => /interlace_autoscaler_tool_calls_pending\{pool_namespace="scaling",pool="maps"\} 9/.test(await metricsText()));
  const maps = await admin.get<ToolPool>(ToolPoolKind, NS, "maps");
  t.equal(maps?.spec.replicas, 1, "external mode: replicas untouched");
  t.equal(maps?.status?.autoscaling, undefined, "external mode: no decision in status");
  const events = await admin.list<KubernetesObject & { reason?: string; involvedObject?: { name?: string } }>(CoreTypes.Event, NS);
  t.notOk(events.items.some((e) => e.involvedObject?.name === "maps" && (e.reason === "ScaledUp" || e.reason === "ScaledDown")), "external mode: no scale event");
  const ep = await admin.get<EnginePool>(EnginePoolKind, NS, "qwen");
  t.equal(ep?.spec.replicas, 1, "no engine reports, so the engines are not resized");

  const metrics = await metricsText();
  t.match(metrics, /interlace_autoscaler_decisions_total\{kind="ToolPool",pool_namespace="scaling",pool="weather",direction="up"\} 1/);
  t.match(metrics, /interlace_autoscaler_desired_replicas\{kind="ToolPool",pool_namespace="scaling",pool="weather"\} 5/);
  t.notMatch(metrics, /interlace_autoscaler_desired_replicas\{kind="ToolPool",pool_namespace="scaling",pool="maps"\}/, "no desired count for an external pool");
});

t.test("the backlog gone, the pool comes back down (stabilization window 0)", async (t) => {
  await jsm.streams.purge(poolStream({ namespace: NS, name: "weather" }));
  const weather = await waitFor("weather scaled down", async () => {
    const p = await admin.get<ToolPool>(ToolPoolKind, NS, "weather");
    return p?.spec.replicas === 1 && p.status?.autoscaling?.lastDirection === "down" ? p : undefined;
  });
  t.equal(weather.status?.autoscaling?.lastReason, "scaled ToolPool weather 5→1: 0 calls pending, 0 running (2 per runner), at most 0 runners wanted over the last 0 s");
  const metrics = await metricsText();
  t.match(metrics, /interlace_autoscaler_decisions_total\{kind="ToolPool",pool_namespace="scaling",pool="weather",direction="down"\} 1/, metrics.split("\n").filter((l) => l.includes("autoscaler")).join("\n"));
});

t.test("a runner's p90 wait reaches the autoscaler through its heartbeat", async (t) => {
  await ensureIntrStream(jsm, NS);
  // Calls that waited 1.5 s before any runner took them.
  await backlog({ namespace: NS, name: "weather" }, 4, "echo", 1_500);
  await startRunner(t, nats.url, poolConfig({ namespace: NS, pool: "weather" }), { heartbeatMs: 100 });
  const seconds = await waitFor("tool wait exported", async () => {
    const m = /interlace_autoscaler_tool_wait_p90_seconds\{pool_namespace="scaling",pool="weather"\} ([0-9.]+)/.exec(await metricsText());
    return m?.[1] === undefined ? undefined : Number(m[1]);
  });
  t.ok(seconds >= 1.5 && seconds < 30, `p90 tool wait ${seconds} s`);
});

t.test("the calls' arrival rate and mean time on a runner (the offered-load rule's inputs) are exported", async (t) => {
  const gauge = async (name: string): Promise<number | undefined> => {
    const m = new RegExp(`${name}\\{pool_namespace="scaling",pool="weather"\\} ([0-9.e+-]+)`).exec(await metricsText());
    return m?.[1] === undefined ? undefined : Number(m[1]);
  };
  await startRunner(t, nats.url, poolConfig({ namespace: NS, pool: "weather" }), { heartbeatMs: 100 });
  // Six calls of 2 s each on a runner of 8 slots: they arrive together and each keeps a slot 2 s.
  await backlog({ namespace: NS, name: "weather" }, 6, "sleep", 0, { ms: 2_000 });
  const rate = await waitFor("an arrival rate with the six calls", async () => {
    const r = await gauge("interlace_autoscaler_tool_call_arrival_rate");
    return r !== undefined && r >= 0.5 ? r : undefined;
  });
  t.ok(rate <= 6 / 0.2, `arrival rate ${rate} calls/s: at most six calls over one 200 ms tick`);
  // The four instant echo calls of the test before may still be in the window: 6 × 2 s over 10 calls is 1.2 s.
  const seconds = await waitFor("a mean call time near the calls' 2 s", async () => {
    const s = await gauge("interlace_autoscaler_tool_call_time_seconds");
    return s !== undefined && s >= 0.9 ? s : undefined;
  });
  t.ok(seconds < 4, `mean call time ${seconds} s`);
});

t.test("an engine's TTFT p90 over the app's ttftP90Ms scales the EnginePool up, and the reason names it", async (t) => {
  await admin.mergePatch(AgentAppKind, NS, "travel", { spec: { slo: { taskLatencyP90Ms: 8000, ttftP90Ms: 1000 } } });
  const engines = await openEnginesBucket(nc);
  const heartbeat = engineHeartbeat({ pod: "qwen-engine-0", pool: { namespace: NS, name: "qwen" }, freeSequences: 2, totalSequences: 4, activeSessions: 2, kvCellsUsed: 1024, kvCellsTotal: 8192, tokensPerSecond: 100, ttftP90Ms: 2500 });
  // Beats as an engine would (the autoscaler counts only fresh ones).
  const beat = async (): Promise<void> => void (await engines.put(engineKey(heartbeat.pool, heartbeat.pod), JSON.stringify({ ...heartbeat, at: Date.now() })));
  await beat();
  const timer = setInterval(() => void beat().catch(() => undefined), 1_000);
  t.teardown(() => clearInterval(timer));
  const qwen = await waitFor("qwen scaled up", async () => {
    const p = await admin.get<EnginePool>(EnginePoolKind, NS, "qwen");
    return p?.spec.replicas === 2 && p.status?.autoscaling?.lastDirection === "up" ? p : undefined;
  });
  // The sessions count as parked on the external pool's standing backlog: nothing but the TTFT objective asks for an engine.
  const reason = "scaled EnginePool qwen 1→2: 0 sessions queued, 0 generating on 4 sequences, KV 13% used, 100 tokens/s, TTFT p90 2.5 s over the SLO's 1.0 s, 2 waiting on tools";
  t.equal(qwen.status?.autoscaling?.lastReason, reason, "no queue, no KV pressure: the TTFT objective alone");
  const event = await waitFor("ScaledUp event", async () => {
    const events = await admin.list<KubernetesObject & { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }>(CoreTypes.Event, NS);
    return events.items.find((e) => e.reason === "ScaledUp" && e.involvedObject?.kind === "EnginePool" && e.involvedObject.name === "qwen");
  });
  t.equal(event.message, reason);
  t.match(await metricsText(), /interlace_autoscaler_engine_ttft_p90_seconds\{pool_namespace="scaling",pool="qwen"\} 2\.5/, "the signal is exported (for KEDA in external mode)");
});
