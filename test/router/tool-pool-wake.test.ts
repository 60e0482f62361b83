/**
 * A ToolPool at zero, woken by the first call, end to end: a real
 * kube-apiserver + etcd, a real nats-server, the operator (its autoscaler
 * ticking), a real router and a real engine process started from the args
 * the operator rendered into the EnginePool's Deployment. A session's tool
 * call to the pool at zero is not failed: the engine publishes it (the
 * operator made the pool's stream, so it is stored) and holds it; the
 * autoscaler sees the pending call on a pool at zero and writes replicas 1
 * with the reason; the "pod" (a real tool runner started from the rendered
 * Deployment and ConfigMap; the test cluster has no kubelet) takes the call,
 * and the session finishes with its result. With no runner coming (a pool in
 * external mode nobody scales) the hold ends and the model reads a
 * `no_runners` error naming it.
 */
import t from "tap";
import type { KubernetesObject, V1ConfigMap, V1Deployment } from "@kubernetes/client-node";
import { parse } from "yaml";
import { readEventStream, type SessionEvent } from "../../common/src/index.js";
import type { ToolRunnerConfig } from "../../common/src/protocol/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { spawnEngine, type EngineProcess } from "../../hack/engine-process.js";
import { AgentAppKind, EnginePoolKind, ToolPoolKind, type AgentApp, type EnginePool, type ToolPool } from "../../operator/src/api/index.js";
import { RUNNER_SPEC_KEY } from "../../operator/src/resources/tool-pool.js";
import { CoreTypes } from "../../operator/src/runtime/index.js";
import { routerOptions } from "../../router/src/config.js";
import { startRouter } from "../../router/src/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { spawnRunner } from "../nats/fixtures.js";
import { startOperatorStack, waitFor } from "../operator/helpers.js";
import { log, postJson } from "./fixtures.js";

t.setTimeout(400_000);
const NS = "toolwake";

const nats = await startNatsServer(t);
const { admin, metricsText } = await startOperatorStack(t, NS, ["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--nats-url", nats.url, "--autoscale-interval-ms", "200"]);

type Event = KubernetesObject & { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } };
const toolPoolEvents = async (name: string): Promise<Event[]> =>
  (await admin.list<Event>(CoreTypes.Event, NS)).items.filter((e) => e.involvedObject?.kind === "ToolPool" && e.involvedObject.name === name && (e.reason === "ScaledUp" || e.reason === "ScaledDown"));

const builtin = (name: string, description: string): ToolPool["spec"]["tools"][number] => ({
  name,
  description,
  parameters: { type: "object", properties: { text: { type: "string" } } },
  // A long estimate gives the call a deadline (10×) well past any cold start here.
  estimatedLatencyMs: 20_000,
  builtin: { name: "echo" },
});
const atZero = { minReplicas: 0, maxReplicas: 2, scaleDownStabilizationSeconds: 3600, idleSecondsBeforeZero: 3600 };

await admin.create<EnginePool>(EnginePoolKind, {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "EnginePool",
  metadata: { name: "gen", namespace: NS },
  spec: { model: { path: "/models/m.gguf" }, runtime: { backend: "llama-cpp", contextSize: 2048, parallelSequences: 2 }, replicas: 1, toolRunnerHoldSeconds: 240 },
});
await admin.create<ToolPool>(ToolPoolKind, {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "ToolPool",
  metadata: { name: "sleepy", namespace: NS },
  spec: { replicas: 0, tools: [builtin("lookup", "Looks a word up.")], autoscaling: atZero },
});
await admin.create<ToolPool>(ToolPoolKind, {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "ToolPool",
  metadata: { name: "manual", namespace: NS },
  spec: { replicas: 0, tools: [builtin("archive", "Archives a word.")], autoscaling: { ...atZero, mode: "external" } },
});
await admin.create<AgentApp>(AgentAppKind, {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "AgentApp",
  metadata: { name: "asker", namespace: NS },
  spec: { enginePool: { name: "gen" }, toolPools: [{ name: "sleepy" }, { name: "manual" }], systemPrompt: "You help.", maxTokens: 64 },
});
const router = await startRouter(routerOptions({ natsUrl: nats.url, presenceMs: 500, coldStartHoldMs: 240_000, engineTtlMs: 15_000, upstreamTimeoutMs: 20_000, logLevel: "silent" }), log);
t.teardown(() => router.close());
const base = `http://127.0.0.1:${router.port}`;
const modelPath = await ensureModel({ preset: "test" });

/** The engine "pod": the entrypoint with the args the operator rendered once they carry `holdMs`, only what the cluster supplies substituted. */
async function startEnginePod(pod: string, holdMs: number): Promise<EngineProcess> {
  const deployment = await waitFor(`the engine Deployment with a ${holdMs} ms tool-runner hold`, async () => {
    const d = await admin.get<V1Deployment>(CoreTypes.Deployment, NS, "gen-engine");
    const args = d?.spec?.template.spec?.containers[0]?.args ?? [];
    return args[args.indexOf("--tool-runner-hold-ms") + 1] === String(holdMs) ? d : undefined;
  });
  const rendered = deployment!.spec!.template.spec!.containers[0]!.args!;
  const args = rendered.map((a, i) => (rendered[i - 1] === "--port" ? "0" : rendered[i - 1] === "--model" ? modelPath : a.replace("$(POD_NAME)", pod)));
  const engine = await spawnEngine(args, { readyTimeoutMs: 120_000 });
  await waitFor("the router to see only this engine", () => router.engines.find(NS, pod) !== undefined && router.engines.describe(NS, "gen").total === 1, 30_000);
  return engine;
}

/** Opens a session whose one tool call goes to `tool`, and reads its events to the end. */
async function sessionCalling(tool: string, text: string): Promise<SessionEvent[]> {
  const res = await postJson(`${base}/v1/apps/${NS}/asker/sessions`, {
    prompt: "Use the tool, then say done.",
    policy: { type: "lpt-dag", calls: [{ id: "c1", tool, arguments: { text } }], finalText: " done" },
  });
  if (res.status !== 201) throw new Error(`POST sessions: ${res.status} ${await res.text()}`);
  const opened = (await res.json()) as { id: string };
  const stream = await fetch(`${base}/v1/apps/${NS}/asker/sessions/${opened.id}/events`, { headers: { accept: "text/event-stream" } });
  const events: SessionEvent[] = [];
  for await (const e of readEventStream<SessionEvent>(stream.body!)) events.push(e);
  return events;
}

const toolInterrupt = (events: SessionEvent[]): Extract<SessionEvent, { type: "interrupt" }> | undefined =>
  events.find((e): e is Extract<SessionEvent, { type: "interrupt" }> => e.type === "interrupt" && (e.kind === "tool_result" || e.kind === "tool_error"));

t.test("the first call to a ToolPool at zero wakes it and is answered after the cold start", async (t) => {
  await waitFor("a decision to keep the pool at zero", async () => /interlace_autoscaler_desired_replicas\{kind="ToolPool",pool_namespace="toolwake",pool="sleepy"\} 0/.test(await metricsText()));
  t.same(await toolPoolEvents("sleepy"), [], "no call yet: the pool stays at zero, no scale event");
  const engine = await startEnginePod("gen-engine-0", 240_000);
  t.teardown(() => engine.stop());

  const session = sessionCalling("lookup", "woken");
  const reason = "woke ToolPool sleepy 0→1: 1 call pending, 0 running (8 per runner)";
  const woken = await waitFor("the autoscaler to wake the pool", async () => {
    const p = await admin.get<ToolPool>(ToolPoolKind, NS, "sleepy");
    return p?.spec.replicas === 1 && p.status?.autoscaling !== undefined ? p : undefined;
  });
  t.match(woken.status?.autoscaling, { desiredReplicas: 1, lastDirection: "up", lastReason: reason }, "status says why");
  const event = await waitFor("ScaledUp event", async () => (await toolPoolEvents("sleepy")).find((e) => e.reason === "ScaledUp"));
  t.equal(event.message, reason);
  const deployment = await waitFor("the runner Deployment at one", async () => {
    const d = await admin.get<V1Deployment>(CoreTypes.Deployment, NS, "sleepy-tools");
    return d?.spec?.replicas === 1 ? d : undefined;
  });

  // The "pod": a tool runner with the rendered spec file and runner id.
  const cm = await admin.get<V1ConfigMap>(CoreTypes.ConfigMap, NS, deployment.spec!.template.spec!.volumes!.find((v) => v.name === "spec")!.configMap!.name!);
  const config = parse(cm!.data![RUNNER_SPEC_KEY]!) as ToolRunnerConfig;
  await spawnRunner(t, nats.url, config, "sleepy-tools-0");

  const events = await session;
  const result = toolInterrupt(events);
  t.equal(result?.kind, "tool_result", "the held call ran on the woken runner");
  t.match(result?.value, /woken/, "and its result reached the model");
  const done = events.at(-1);
  t.equal(done?.type === "done" ? done.reason : done?.type, "eos", "the session ran to its end");
  await waitFor("the backlog to clear", async () => /interlace_autoscaler_tool_calls_pending\{pool_namespace="toolwake",pool="sleepy"\} 0/.test(await metricsText()));
  t.pass("the backlog is gone");
  await engine.stop();
});

t.test("with no runner coming, the hold ends with a no_runners error the model reads", async (t) => {
  await admin.mergePatch(EnginePoolKind, NS, "gen", { spec: { toolRunnerHoldSeconds: 2 } });
  const engine = await startEnginePod("gen-engine-1", 2_000);
  t.teardown(() => engine.stop());
  const events = await sessionCalling("archive", "never");
  const error = toolInterrupt(events);
  t.equal(error?.kind, "tool_error");
  t.match(error?.value, /no_runners: no tool runner came up for pool toolwake\/manual within 2000 ms/, "the model reads why the call failed");
  t.equal(events.at(-1)?.type, "done", "and the session goes on to its end");
  t.equal((await admin.get<ToolPool>(ToolPoolKind, NS, "manual"))?.spec.replicas, 0, "external mode: the autoscaler left the pool at zero");
  t.same(await toolPoolEvents("manual"), [], "and recorded no scale event");
});
