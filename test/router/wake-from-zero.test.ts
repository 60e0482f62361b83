/**
 * Wake from zero, end to end, on a real kube-apiserver + etcd, a real
 * nats-server, the operator (with its autoscaler ticking) and a real router:
 * an EnginePool the autoscaler keeps at zero serves nothing and wakes for
 * nothing until a request reaches the router. The router holds it (no ready
 * engine) and says so in its presence; the autoscaler reads the held count,
 * writes spec.replicas 1 with the reason in status and an Event, and the
 * operator's Deployment follows. The test cluster has no kubelet, so the
 * "pod" is a real engine process started from the args the operator
 * rendered into that Deployment; its first heartbeat releases the held
 * request, which is served to its end.
 */
import t from "tap";
import type { KubernetesObject, V1Deployment } from "@kubernetes/client-node";
import { readEventStream, type SessionEvent } from "../../common/src/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { AgentAppKind, EnginePoolKind, type AgentApp, type EnginePool } from "../../operator/src/api/index.js";
import { CoreTypes } from "../../operator/src/runtime/index.js";
import { routerOptions } from "../../router/src/config.js";
import { startRouter } from "../../router/src/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { startOperatorStack, waitFor } from "../operator/helpers.js";
import { log, postJson, QUICK } from "./fixtures.js";

t.setTimeout(300_000);
const NS = "wake";

const nats = await startNatsServer(t);
const { cp, admin, metricsText } = await startOperatorStack(t, NS, ["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--nats-url", nats.url, "--autoscale-interval-ms", "200"]);

type Event = KubernetesObject & { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } };
const scaleEvents = async (): Promise<Event[]> =>
  (await admin.list<Event>(CoreTypes.Event, NS)).items.filter((e) => e.involvedObject?.kind === "EnginePool" && (e.reason === "ScaledUp" || e.reason === "ScaledDown"));

t.test("a request held by the router wakes the EnginePool at zero, and is served by the engine that comes up", async (t) => {
  await admin.create<EnginePool>(EnginePoolKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "sleepy", namespace: NS },
    spec: {
      model: { path: "/models/m.gguf" },
      runtime: { backend: "llama-cpp", contextSize: 2048, parallelSequences: 2 },
      replicas: 0,
      drainGraceSeconds: 5,
      autoscaling: { minReplicas: 0, maxReplicas: 2, scaleDownStabilizationSeconds: 3600, idleSecondsBeforeZero: 3600 },
    },
  });
  await admin.create<AgentApp>(AgentAppKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "AgentApp",
    metadata: { name: "late", namespace: NS },
    spec: { enginePool: { name: "sleepy" }, systemPrompt: "You help.", maxTokens: 64 },
  });
  // A generous engine TTL: a freshly started engine on a loaded machine may miss a beat while it warms up.
  const router = await startRouter(routerOptions({ natsUrl: nats.url, presenceMs: 500, coldStartHoldMs: 240_000, engineTtlMs: 15_000, upstreamTimeoutMs: 20_000, logLevel: "silent" }), log);
  t.teardown(() => router.close());
  const base = `http://127.0.0.1:${router.port}`;
  await waitFor("the router to serve the app", () => router.apps.get(NS, "late") !== undefined, 30_000);

  // The autoscaler has looked at the pool at zero with nothing held, and kept it there.
  await waitFor("a decision to keep the pool at zero", async () => /interlace_autoscaler_desired_replicas\{kind="EnginePool",pool_namespace="wake",pool="sleepy"\} 0/.test(await metricsText()));
  t.equal((await admin.get<EnginePool>(EnginePoolKind, NS, "sleepy"))?.spec.replicas, 0, "nothing held: the pool stays at zero");
  t.same(await scaleEvents(), [], "and no scale event");
  const zero = await waitFor("the engine Deployment at zero", async () => {
    const d = await admin.get<V1Deployment>(CoreTypes.Deployment, NS, "sleepy-engine");
    return d?.spec?.replicas === 0 ? d : undefined;
  });
  t.ok(zero, "the Deployment exists with no pod");

  const pending = postJson(`${base}/v1/apps/${NS}/late/sessions`, QUICK);
  const reason = "woke EnginePool sleepy 0→1: 1 request held by the router";
  const woken = await waitFor("the autoscaler to wake the pool", async () => {
    const p = await admin.get<EnginePool>(EnginePoolKind, NS, "sleepy");
    return p?.spec.replicas === 1 && p.status?.autoscaling !== undefined ? p : undefined;
  });
  t.match(woken.status?.autoscaling, { desiredReplicas: 1, lastDirection: "up", lastReason: reason }, "status says why");
  const event = await waitFor("ScaledUp event", async () => (await scaleEvents()).find((e) => e.reason === "ScaledUp"));
  t.equal(event.message, reason);
  t.match(await metricsText(), /interlace_autoscaler_engine_held_requests\{pool_namespace="wake",pool="sleepy"\} 1/, "the held request is an exported signal");
  const deployment = await waitFor("the engine Deployment at one", async () => {
    const d = await admin.get<V1Deployment>(CoreTypes.Deployment, NS, "sleepy-engine");
    return d?.spec?.replicas === 1 ? d : undefined;
  });

  // The "pod": the engine entrypoint with the args the operator rendered, only what the cluster supplies substituted.
  const pod = deployment.spec!.template.spec!;
  t.equal(pod.terminationGracePeriodSeconds, 20, "the pod's termination grace: the drain's 5 s and 15 s for the engine's shutdown");
  const rendered = pod.containers[0]!.args!;
  t.equal(rendered[rendered.indexOf("--drain-grace-ms") + 1], "5000", "the EnginePool's drain grace reaches the engine");
  const modelPath = await ensureModel({ preset: "test" });
  const args = rendered.map((a, i) => (rendered[i - 1] === "--port" ? "0" : rendered[i - 1] === "--model" ? modelPath : a.replace("$(POD_NAME)", "sleepy-engine-0")));
  const engine = await spawnEngine(args, { readyTimeoutMs: 120_000 });
  t.teardown(() => engine.stop());

  const res = await pending;
  t.equal(res.status, 201, "the held request was placed on the woken engine");
  const opened = (await res.json()) as { id: string; engine: string };
  t.equal(opened.engine, "sleepy-engine-0");
  const stream = await fetch(`${base}/v1/apps/${NS}/late/sessions/${opened.id}/events`, { headers: { accept: "text/event-stream" } });
  t.equal(stream.status, 200);
  const events: SessionEvent[] = [];
  for await (const e of readEventStream<SessionEvent>(stream.body!)) events.push(e);
  const done = events.at(-1);
  t.equal(done?.type === "done" ? done.reason : done?.type, "eos", "and ran to its end");
});
