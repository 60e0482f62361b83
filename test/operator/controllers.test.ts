/**
 * The reconcilers against a real etcd + kube-apiserver (RBAC on), with the
 * operator running under the chart's own ServiceAccount and ClusterRole, so a
 * missing permission fails here. No kube-controller-manager runs: the test
 * plays the Deployment controller by writing Deployment status, and asserts
 * owner references instead of garbage collection.
 */
import t from "tap";
import type { KubernetesObject, V1ConfigMap, V1Deployment, V1PodDisruptionBudget, V1Service } from "@kubernetes/client-node";
import { parse } from "yaml";
import { controlPlaneFor } from "../helpers/control-plane.js";
import { AgentAppKind, EnginePoolKind, InferencePoolType, ToolPoolKind, type AgentApp, type EnginePool, type InferencePool, type ToolPool } from "../../operator/src/api/index.js";
import { TOOLPOOL_FINALIZER, type PoolCleanup } from "../../operator/src/controllers/index.js";
import { APP_CONFIG_KEY, RUNNER_SPEC_KEY, type AppConfig } from "../../operator/src/resources/index.js";
import { CoreTypes, KubeClient } from "../../operator/src/runtime/index.js";
import { CoreV1Api, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { ToolRunnerConfig } from "../../common/src/protocol/index.js";
import { adminAccess, condition, installGeneratedCrds, markDeploymentAvailable, operatorAccount, startTestOperator, testLogger, waitFor } from "./helpers.js";

const NS = "team";

/** A cleanup hook that records calls and can be told to fail. */
class RecordingCleanup implements PoolCleanup {
  calls: string[] = [];
  failuresLeft = 0;
  async cleanup(pool: { namespace: string; name: string }): Promise<void> {
    this.calls.push(`${pool.namespace}/${pool.name}`);
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      throw new Error("nats unavailable (simulated)");
    }
  }
  async close(): Promise<void> {}
}

const cp = await controlPlaneFor(t);
const admin = new KubeClient(adminAccess(cp));
await installGeneratedCrds(admin);
await admin.create(CoreTypes.Namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
const saConfig = await operatorAccount(cp, "interlace-system", "interlace");
const cleanup = new RecordingCleanup();
const operator = startTestOperator(["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--router-url", "http://router.test:8080"], saConfig, testLogger("operator"), {
  cleanup,
});
t.teardown(() => operator.stop());
await operator.start();

const get = <T extends KubernetesObject>(type: Parameters<KubeClient["get"]>[0], name: string): Promise<T | null> => admin.get<T>(type, NS, name);

t.test("the operator's account has the chart's permissions only (RBAC is enforced)", async (t) => {
  const asOperator = new KubeClient(saConfig);
  const secrets = { group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: true };
  const denied = await asOperator.list(secrets, NS).then(
    () => null,
    (err: unknown) => err,
  );
  t.match(denied, { status: 403, reason: "Forbidden" }, "cannot list Secrets (it only reads and writes the ones it makes)");
  t.ok(await asOperator.list(CoreTypes.ConfigMap, NS), "ConfigMaps are allowed");
});

t.test("probes and metrics are served", async (t) => {
  const base = `http://127.0.0.1:${operator.manager.probePort}`;
  t.equal((await fetch(`${base}/healthz`)).status, 200);
  await waitFor("readyz", async () => (await fetch(`${base}/readyz`)).status === 200);
  const metrics = await (await fetch(`${base}/metrics`)).text();
  t.match(metrics, /interlace_operator_workqueue_depth/);
  t.match(metrics, /interlace_operator_leader 1/);
});

t.test("EnginePool: children, status after availability, observedGeneration, events", async (t) => {
  const pool: EnginePool = {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "qwen", namespace: NS },
    spec: { model: { path: "/models/q.gguf" }, replicas: 2, runtime: { backend: "llama-cpp", contextSize: 2048 }, kvPolicy: "keep" },
  };
  const created = await admin.create(EnginePoolKind, pool);
  const dep = await waitFor("engine deployment", () => get<V1Deployment>(CoreTypes.Deployment, "qwen-engine").then((d) => d ?? undefined));
  const owner = dep.metadata?.ownerReferences?.[0];
  t.match(owner, { kind: "EnginePool", name: "qwen", uid: created.metadata?.uid, controller: true, blockOwnerDeletion: true });
  t.equal(dep.spec?.replicas, 2);
  t.equal(dep.spec?.template.spec?.containers[0]?.image, "test/interlace:dev");
  t.ok(dep.spec?.template.spec?.containers[0]?.args?.includes("--kv-policy"));
  const svc = await waitFor("engine service", () => get<V1Service>(CoreTypes.Service, "qwen-engine").then((s) => s ?? undefined));
  t.equal(svc.spec?.clusterIP, "None");
  t.equal(svc.metadata?.ownerReferences?.[0]?.uid, created.metadata?.uid);
  const pdb = await waitFor("engine pdb", () => get<V1PodDisruptionBudget>(CoreTypes.PodDisruptionBudget, "qwen-engine").then((p) => p ?? undefined));
  t.equal(pdb.metadata?.ownerReferences?.[0]?.uid, created.metadata?.uid);

  const pending = await waitFor("status before availability", async () => {
    const p = await get<EnginePool>(EnginePoolKind, "qwen");
    return p?.status?.observedGeneration === 1 && condition(p, "Ready") ? p : undefined;
  });
  t.match(condition(pending, "Ready"), { status: "False", reason: "ReplicasUnavailable" });
  t.match(condition(pending, "Progressing"), { status: "True", reason: "RolloutInProgress" });
  t.equal(pending.status?.endpoint, "http://qwen-engine.team.svc:8080");

  await markDeploymentAvailable(admin, NS, "qwen-engine");
  const ready = await waitFor("Ready=True", async () => {
    const p = await get<EnginePool>(EnginePoolKind, "qwen");
    return condition(p, "Ready")?.status === "True" ? p : undefined;
  });
  t.equal(ready.status?.readyReplicas, 2);
  t.match(condition(ready, "Degraded"), { status: "False" });

  // A spec change: observedGeneration follows; Ready drops until the new rollout is available.
  await admin.mergePatch(EnginePoolKind, NS, "qwen", { spec: { replicas: 3 } });
  const rolling = await waitFor("observedGeneration 2", async () => {
    const p = await get<EnginePool>(EnginePoolKind, "qwen");
    return p?.status?.observedGeneration === 2 ? p : undefined;
  });
  t.equal(rolling.metadata.generation, 2);
  t.match(condition(rolling, "Ready"), { status: "False", reason: "ReplicasUnavailable" });
  t.equal((await get<V1Deployment>(CoreTypes.Deployment, "qwen-engine"))?.spec?.replicas, 3);
  await markDeploymentAvailable(admin, NS, "qwen-engine");
  await waitFor("Ready again", async () => condition(await get<EnginePool>(EnginePoolKind, "qwen"), "Ready")?.status === "True");

  const events = await admin.list<KubernetesObject & { reason?: string; involvedObject?: { name?: string; kind?: string } }>(CoreTypes.Event, NS);
  t.ok(
    events.items.some((e) => e.reason === "Ready" && e.involvedObject?.kind === "EnginePool" && e.involvedObject.name === "qwen"),
    "a Ready event was recorded",
  );
});

t.test("EnginePool with adapters: a pod whose model check failed makes the pool Degraded with the check's reason; a fixed adapter clears it", async (t) => {
  const pool: EnginePool = {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "tuned", namespace: NS },
    spec: {
      model: { path: "/models/gemma.gguf", adapters: [{ name: "cml", hostPath: "/srv/adapters/cml.gguf", scale: 0.5 }] },
      runtime: { backend: "llama-cpp" },
    },
  };
  await admin.create(EnginePoolKind, pool);
  const dep = await waitFor("engine deployment", () => get<V1Deployment>(CoreTypes.Deployment, "tuned-engine").then((d) => d ?? undefined));
  const spec = dep.spec!.template.spec!;
  const args = spec.containers[0]!.args!;
  t.equal(args[args.indexOf("--adapters") + 1], "/models-adapters/cml/cml.gguf@0.5", "the adapter is rendered with its scale");
  const check = spec.initContainers?.find((c) => c.name === "check-model");
  t.same(check?.args, ["--model", "/models/gemma.gguf", "--adapters", "/models-adapters/cml/cml.gguf@0.5"], "the model check runs first with the engine's own flags");
  // Play the kubelet: an engine pod of the pool whose check-model container exited with its reason.
  const podBody = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "tuned-engine-abc", namespace: NS, labels: dep.spec!.template.metadata!.labels! },
    spec: { containers: [{ name: "engine", image: "test/interlace:dev" }] },
  };
  await admin.create(CoreTypes.Pod, podBody);
  const failed = {
    phase: "Pending",
    initContainerStatuses: [
      {
        name: "check-model",
        image: "test/interlace:dev",
        imageID: "",
        ready: false,
        restartCount: 2,
        state: { waiting: { reason: "CrashLoopBackOff" } },
        lastState: { terminated: { exitCode: 1, reason: "Error", message: "AdapterIncompatible: adapter /models-adapters/cml/cml.gguf is for llama, the model /models/gemma.gguf is gemma3" } },
      },
    ],
  };
  await admin.kubeConfig.makeApiClient(CoreV1Api).patchNamespacedPodStatus({ namespace: NS, name: "tuned-engine-abc", body: { status: failed } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
  const degraded = await waitFor("Degraded with the check's reason", async () => {
    const p = await get<EnginePool>(EnginePoolKind, "tuned");
    return condition(p, "Degraded")?.status === "True" ? p : undefined;
  });
  t.match(condition(degraded, "Degraded"), { reason: "AdapterIncompatible" });
  t.match(condition(degraded, "Ready"), { status: "False", reason: "AdapterIncompatible" });
  t.match(degraded.status?.conditions?.find((c) => c.type === "Degraded")?.message, /pod tuned-engine-abc: adapter .* is for llama, the model .* is gemma3/);
  // The adapter fixed and the pod replaced: rolling out again, then Ready.
  await admin.delete(CoreTypes.Pod, NS, "tuned-engine-abc");
  await waitFor("not Degraded once the pod is gone", async () => condition(await get<EnginePool>(EnginePoolKind, "tuned"), "Degraded")?.status === "False");
  await markDeploymentAvailable(admin, NS, "tuned-engine");
  await waitFor("Ready", async () => condition(await get<EnginePool>(EnginePoolKind, "tuned"), "Ready")?.status === "True");
});

t.test("EnginePool exposed as an InferencePool: the picker and the InferencePool, Ready with both, removed with the exposure", async (t) => {
  const pool: EnginePool = {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "gw", namespace: NS },
    spec: { model: { path: "/models/q.gguf" }, replicas: 2, runtime: { backend: "llama-cpp" }, inferencePool: { pickerReplicas: 2 } },
  };
  const created = await admin.create(EnginePoolKind, pool);
  const engine = await waitFor("engine deployment", () => get<V1Deployment>(CoreTypes.Deployment, "gw-engine").then((d) => d ?? undefined));
  const picker = await waitFor("picker deployment", () => get<V1Deployment>(CoreTypes.Deployment, "gw-picker").then((d) => d ?? undefined));
  const c = picker.spec?.template.spec?.containers[0];
  t.same(c?.command, ["node", "dist/router/src/picker/main.js"]);
  t.match(c?.args?.join(" "), /--grpc-port 9002 .*--pool team\/gw --placement prefix-affinity --load-factor 125 --prefix-wait-ms 1000 --engine-ttl-ms 3000 --prefix-slack 2/, "placement flags as the operator was told");
  t.equal(picker.spec?.replicas, 2);
  t.equal(picker.metadata?.ownerReferences?.[0]?.uid, created.metadata?.uid);
  const svc = await waitFor("picker service", () => get<V1Service>(CoreTypes.Service, "gw-picker").then((s) => s ?? undefined));
  t.match(svc.spec?.ports?.find((p) => p.name === "grpc"), { port: 9002, appProtocol: "kubernetes.io/h2c" });
  const ip = await waitFor("InferencePool", () => get<InferencePool>(InferencePoolType, "gw").then((p) => p ?? undefined));
  t.same(ip.spec.selector.matchLabels, engine.spec?.selector.matchLabels, "it selects the engine pods");
  t.same(ip.spec.targetPorts, [{ number: 8080 }]);
  t.match(ip.spec.endpointPickerRef, { kind: "Service", name: "gw-picker", port: { number: 9002 }, failureMode: "FailClose" });
  t.equal(ip.metadata.ownerReferences?.[0]?.uid, created.metadata?.uid);

  await markDeploymentAvailable(admin, NS, "gw-engine");
  const waiting = await waitFor("engines available, picker not yet", async () => {
    const p = await get<EnginePool>(EnginePoolKind, "gw");
    return p?.status?.inferencePool === "gw" && condition(p, "Ready")?.status === "False" ? p : undefined;
  });
  t.match(condition(waiting, "Ready"), { reason: "ReplicasUnavailable" });
  await markDeploymentAvailable(admin, NS, "gw-picker");
  await waitFor("Ready with both", async () => condition(await get<EnginePool>(EnginePoolKind, "gw"), "Ready")?.status === "True");

  await admin.mergePatch(EnginePoolKind, NS, "gw", { spec: { inferencePool: null } });
  await waitFor("exposure removed", async () => (await get(CoreTypes.Deployment, "gw-picker")) === null && (await get(CoreTypes.Service, "gw-picker")) === null && (await get(InferencePoolType, "gw")) === null);
  const plain = await waitFor("status without it", async () => {
    const p = await get<EnginePool>(EnginePoolKind, "gw");
    return p?.status?.inferencePool === undefined && condition(p, "Ready")?.status === "True" ? p : undefined;
  });
  t.equal(plain.status?.readyReplicas, 2);
  t.ok(await admin.delete(EnginePoolKind, NS, "gw"));
});

t.test("drift: a hand-edited child is put back, a deleted child is recreated", async (t) => {
  // A different field manager changes a field the operator owns.
  await admin.mergePatch(CoreTypes.Deployment, NS, "qwen-engine", { spec: { replicas: 7 } }, { fieldManager: "kubectl-edit" });
  await waitFor("replicas restored", async () => (await get<V1Deployment>(CoreTypes.Deployment, "qwen-engine"))?.spec?.replicas === 3);
  await admin.mergePatch(
    CoreTypes.Deployment,
    NS,
    "qwen-engine",
    { spec: { template: { spec: { containers: [{ name: "engine", image: "evil/image:latest" }] } } } },
    { fieldManager: "kubectl-edit" },
  );
  await waitFor("image restored", async () => (await get<V1Deployment>(CoreTypes.Deployment, "qwen-engine"))?.spec?.template.spec?.containers[0]?.image === "test/interlace:dev");

  const oldUid = (await get<V1Service>(CoreTypes.Service, "qwen-engine"))?.metadata?.uid;
  t.ok(await admin.delete(CoreTypes.Service, NS, "qwen-engine"));
  const recreated = await waitFor("service recreated", async () => {
    const s = await get<V1Service>(CoreTypes.Service, "qwen-engine");
    return s && s.metadata?.uid !== oldUid ? s : undefined;
  });
  t.equal(recreated.spec?.clusterIP, "None");
  t.ok(await admin.delete(CoreTypes.PodDisruptionBudget, NS, "qwen-engine"));
  await waitFor("pdb recreated", async () => (await get(CoreTypes.PodDisruptionBudget, "qwen-engine")) !== null);
});

/** Reconcile passes one controller has finished. */
async function passes(controller: string): Promise<number> {
  const m = await operator.manager.opts.metrics.reconciles.get();
  return m.values.filter((v) => v.labels["controller"] === controller).reduce((sum, v) => sum + v.value, 0);
}

t.test("steady state: a pass with nothing to change writes nothing", async (t) => {
  const rv = async (type: Parameters<KubeClient["get"]>[0]): Promise<string | undefined> => (await get(type, "qwen-engine"))?.metadata?.resourceVersion;
  const before = { dep: await rv(CoreTypes.Deployment), svc: await rv(CoreTypes.Service), pdb: await rv(CoreTypes.PodDisruptionBudget) };
  const done = await passes("enginepool");
  // An annotation changes the object (an update event, a pass) but not the spec.
  const touched = await admin.mergePatch<EnginePool>(EnginePoolKind, NS, "qwen", { metadata: { annotations: { "test/touch": "1" } } });
  await waitFor("a pass after the touch", async () => (await passes("enginepool")) > done);
  const after = await get<EnginePool>(EnginePoolKind, "qwen");
  t.equal(after?.metadata.resourceVersion, touched.metadata.resourceVersion, "status not rewritten");
  t.same({ dep: await rv(CoreTypes.Deployment), svc: await rv(CoreTypes.Service), pdb: await rv(CoreTypes.PodDisruptionBudget) }, before, "children not rewritten");
});

const tools: ToolPool["spec"]["tools"] = [
  { name: "calculator", description: "Evaluates arithmetic.", parameters: { type: "object", properties: { expression: { type: "string" } } }, builtin: { name: "calculator" } },
  { name: "search", description: "Searches the web.", parameters: { type: "object" }, http: { url: "http://search.test/api" }, estimatedLatencyMs: 1200 },
];

t.test("ToolPool: finalizer, spec ConfigMap, runner Deployment, Ready after availability, drift on the ConfigMap", async (t) => {
  const created = await admin.create<ToolPool>(ToolPoolKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "ToolPool",
    metadata: { name: "web", namespace: NS },
    spec: { tools, replicas: 2, concurrency: 4 },
  });
  await waitFor("finalizer", async () => (await get<ToolPool>(ToolPoolKind, "web"))?.metadata.finalizers?.includes(TOOLPOOL_FINALIZER));
  const cm = await waitFor("spec configmap", () => get<V1ConfigMap>(CoreTypes.ConfigMap, "web-tools").then((c) => c ?? undefined));
  t.equal(cm.metadata?.ownerReferences?.[0]?.uid, created.metadata?.uid);
  const file = parse(cm.data?.[RUNNER_SPEC_KEY] ?? "") as ToolRunnerConfig;
  t.same(file.tools.map((x) => x.name), ["calculator", "search"]);
  t.equal(file.concurrency, 4);
  const dep = await waitFor("runner deployment", () => get<V1Deployment>(CoreTypes.Deployment, "web-tools").then((d) => d ?? undefined));
  t.equal(dep.metadata?.ownerReferences?.[0]?.uid, created.metadata?.uid);
  t.equal(dep.spec?.replicas, 2);
  const svc = await waitFor("runner metrics service", () => get<V1Service>(CoreTypes.Service, "web-tools").then((s) => s ?? undefined));
  t.equal(svc.metadata?.ownerReferences?.[0]?.uid, created.metadata?.uid);
  t.same(svc.spec?.ports?.map((p) => p.name), ["http"], "the port a ServiceMonitor scrapes");
  t.same(svc.spec?.selector, dep.spec?.selector?.matchLabels, "selects the runner pods");

  const pending = await waitFor("status", async () => {
    const p = await get<ToolPool>(ToolPoolKind, "web");
    return condition(p, "Ready") ? p : undefined;
  });
  t.match(condition(pending, "Ready"), { status: "False", reason: "ReplicasUnavailable" });
  t.equal(pending.status?.toolCount, 2);
  t.equal(pending.status?.subject, "interlace.tools.team.web.>");
  await markDeploymentAvailable(admin, NS, "web-tools");
  await waitFor("ToolPool Ready", async () => condition(await get<ToolPool>(ToolPoolKind, "web"), "Ready")?.status === "True");

  await admin.mergePatch(CoreTypes.ConfigMap, NS, "web-tools", { data: { [RUNNER_SPEC_KEY]: "tools: []\n" } }, { fieldManager: "kubectl-edit" });
  await waitFor("spec file restored", async () => (await get<V1ConfigMap>(CoreTypes.ConfigMap, "web-tools"))?.data?.[RUNNER_SPEC_KEY] === cm.data?.[RUNNER_SPEC_KEY]);
});

t.test("AgentApp: missing references are Degraded with a reason, then Ready once they exist and are Ready", async (t) => {
  await admin.create<AgentApp>(AgentAppKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "AgentApp",
    metadata: { name: "helper", namespace: NS },
    spec: { enginePool: { name: "later" }, toolPools: [{ name: "web", tools: ["calculator"] }, { name: "files" }], systemPrompt: "You help." },
  });
  const missingEngine = await waitFor("EnginePoolNotFound", async () => {
    const a = await get<AgentApp>(AgentAppKind, "helper");
    return condition(a, "Degraded")?.reason === "EnginePoolNotFound" ? a : undefined;
  });
  t.match(condition(missingEngine, "Degraded"), { status: "True" });
  t.match(condition(missingEngine, "Ready"), { status: "False", reason: "EnginePoolNotFound" });
  t.equal(missingEngine.status?.observedGeneration, 1);
  t.notOk(missingEngine.status?.endpoint);
  await waitFor("a Warning event with the reason", async () => {
    const events = await admin.list<KubernetesObject & { type?: string; reason?: string; involvedObject?: { kind?: string; name?: string } }>(CoreTypes.Event, NS);
    return events.items.some((e) => e.type === "Warning" && e.reason === "EnginePoolNotFound" && e.involvedObject?.kind === "AgentApp" && e.involvedObject.name === "helper");
  });

  await admin.create<EnginePool>(EnginePoolKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "later", namespace: NS },
    spec: { model: { path: "/models/m.gguf" }, runtime: { backend: "llama-cpp" } },
  });
  await waitFor("ToolPoolNotFound", async () => condition(await get<AgentApp>(AgentAppKind, "helper"), "Degraded")?.reason === "ToolPoolNotFound");

  await admin.create<ToolPool>(ToolPoolKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "ToolPool",
    metadata: { name: "files", namespace: NS },
    spec: { tools: [{ name: "read_file", description: "Reads a file.", parameters: { type: "object" }, builtin: { name: "echo" } }] },
  });
  const waiting = await waitFor("DependenciesNotReady", async () => {
    const a = await get<AgentApp>(AgentAppKind, "helper");
    return condition(a, "Ready")?.reason === "DependenciesNotReady" ? a : undefined;
  });
  t.match(condition(waiting, "Degraded"), { status: "False" });
  t.equal(waiting.status?.endpoint, "http://router.test:8080/v1/apps/team/helper");

  await waitFor("engine deployment", async () => (await get(CoreTypes.Deployment, "later-engine")) !== null);
  await markDeploymentAvailable(admin, NS, "later-engine");
  await waitFor("files runner deployment", async () => (await get(CoreTypes.Deployment, "files-tools")) !== null);
  await markDeploymentAvailable(admin, NS, "files-tools");
  const ready = await waitFor("AgentApp Ready", async () => {
    const a = await get<AgentApp>(AgentAppKind, "helper");
    return condition(a, "Ready")?.status === "True" ? a : undefined;
  });
  t.equal(ready.status?.toolCount, 2);
  t.equal(ready.status?.configMap, "helper-app-config");
  const cm = await get<V1ConfigMap>(CoreTypes.ConfigMap, "helper-app-config");
  t.equal(cm?.metadata?.ownerReferences?.[0]?.uid, ready.metadata.uid);
  const config = JSON.parse(cm?.data?.[APP_CONFIG_KEY] ?? "{}") as AppConfig;
  t.equal(config.systemPrompt, "You help.");
  t.same(config.enginePool, { name: "later" });
  t.same(config.tools.map((x) => `${x.pool?.name}/${x.name}`), ["web/calculator", "files/read_file"]);

  // A spec change re-renders the config and moves observedGeneration.
  await admin.mergePatch(AgentAppKind, NS, "helper", { spec: { systemPrompt: "You help, briefly." } });
  await waitFor("observedGeneration 2", async () => (await get<AgentApp>(AgentAppKind, "helper"))?.status?.observedGeneration === 2);
  const updated = await get<V1ConfigMap>(CoreTypes.ConfigMap, "helper-app-config");
  t.equal((JSON.parse(updated?.data?.[APP_CONFIG_KEY] ?? "{}") as AppConfig).systemPrompt, "You help, briefly.");
});

t.test("ToolPool deletion: cleanup runs (retried after a failure), then the finalizer is removed", async (t) => {
  // Fail until the test has seen the failure reported, then recover.
  cleanup.failuresLeft = Number.POSITIVE_INFINITY;
  const before = cleanup.calls.length;
  t.ok(await admin.delete(ToolPoolKind, NS, "web"));
  const degraded = await waitFor("CleanupFailed", async () => {
    const p = await get<ToolPool>(ToolPoolKind, "web");
    return condition(p, "Degraded")?.reason === "CleanupFailed" ? p : undefined;
  });
  t.ok(degraded.metadata.deletionTimestamp, "still present while its finalizer is pending");
  t.ok(degraded.metadata.finalizers?.includes(TOOLPOOL_FINALIZER));
  cleanup.failuresLeft = 0;
  await waitFor("ToolPool gone", async () => (await get(ToolPoolKind, "web")) === null);
  const calls = cleanup.calls.slice(before);
  t.ok(calls.length >= 2, "retried after the failure");
  t.ok(calls.every((c) => c === "team/web"), "cleanup targeted the deleted pool");
  // The AgentApp that referenced it notices.
  await waitFor("AgentApp degraded by the deletion", async () => condition(await get<AgentApp>(AgentAppKind, "helper"), "Degraded")?.reason === "ToolPoolNotFound");
});
