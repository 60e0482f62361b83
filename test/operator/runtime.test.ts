/**
 * The operator runtime against a real kube-apiserver: the informer's
 * list + watch (and its relist when the API server says 410 Gone), and
 * leader election between two operators running under the chart's RBAC —
 * one reconciles, the standby takes over when the leader stops, and a lease
 * left by a crashed holder is taken over once it expires.
 */
import t from "tap";
import { spawn } from "node:child_process";
import path from "node:path";
import { Watch, type KubernetesObject, type V1ConfigMap, type V1Deployment } from "@kubernetes/client-node";
import { controlPlaneFor } from "../helpers/control-plane.js";
import { EnginePoolKind, type EnginePool } from "../../operator/src/api/index.js";
import { CoreTypes, Informer, KubeClient, collectionPath } from "../../operator/src/runtime/index.js";
import type { Operator } from "../../operator/src/main.js";
import { adminAccess, installGeneratedCrds, operatorAccount, startTestOperator, testLogger, waitFor } from "./helpers.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
// Watches straight from etcd with frequent compaction: an old resource
// version is answered with 410 Expired, as on a long-running cluster.
const cp = await controlPlaneFor(t, { apiServerArgs: ["--watch-cache=false", "--etcd-compaction-interval=1s"] });
const admin = new KubeClient(adminAccess(cp));
await installGeneratedCrds(admin);

async function namespace(name: string): Promise<void> {
  await admin.create(CoreTypes.Namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
}

function configMap(ns: string, name: string, value: string): V1ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns }, data: { value } };
}

t.test("informer: list, then watch adds, updates and deletes into the cache", async (t) => {
  await namespace("inf");
  await admin.create(CoreTypes.ConfigMap, configMap("inf", "a", "1"));
  const seen: string[] = [];
  const inf = new Informer<V1ConfigMap>({ client: admin, type: CoreTypes.ConfigMap, namespace: "inf", log: testLogger("informer") });
  inf.addHandler({
    add: (o) => seen.push(`add ${o.metadata?.name}`),
    update: (n) => seen.push(`update ${n.metadata?.name}=${n.data?.["value"]}`),
    delete: (o) => seen.push(`delete ${o.metadata?.name}`),
  });
  inf.start();
  t.teardown(() => inf.stop());
  await inf.waitForSync();
  t.ok(inf.hasSynced());
  t.equal(inf.get("inf", "a")?.data?.["value"], "1", "listed");
  await admin.create(CoreTypes.ConfigMap, configMap("inf", "b", "2"));
  await admin.mergePatch(CoreTypes.ConfigMap, "inf", "a", { data: { value: "3" } });
  await admin.delete(CoreTypes.ConfigMap, "inf", "b");
  await waitFor("watch events", () => seen.includes("delete b"));
  t.same(seen, ["add a", "add b", "update a=3", "delete b"]);
  t.equal(inf.get("inf", "a")?.data?.["value"], "3");
  t.equal(inf.get("inf", "b"), undefined);
  t.equal(inf.listCount, 1, "one list; everything else came from the watch");
  t.not(inf.latestResourceVersion(), "");
});

t.test("informer: resuming from a compacted resource version (410 Gone) relists", async (t) => {
  await namespace("gone");
  await admin.create(CoreTypes.ConfigMap, configMap("gone", "x", "1"));
  const inf = new Informer<V1ConfigMap>({ client: admin, type: CoreTypes.ConfigMap, namespace: "gone", log: testLogger("informer") });
  inf.start();
  t.teardown(() => inf.stop());
  await inf.waitForSync();
  await inf.stop();
  const resumeFrom = inf.latestResourceVersion();
  // Writes elsewhere move etcd on; wait until the informer's resume point has
  // been compacted away (the server then answers a watch from it with 410 Expired).
  await admin.create(CoreTypes.ConfigMap, configMap("gone", "later", "1"));
  const watch = new Watch(admin.kubeConfig);
  await waitFor("the resume point compacted", async () => {
    await admin.mergePatch(CoreTypes.ConfigMap, "gone", "later", { data: { value: String(Date.now()) } });
    return new Promise<boolean>((resolve) => {
      let code: number | undefined;
      void watch.watch(
        collectionPath(CoreTypes.ConfigMap, "gone"),
        { resourceVersion: resumeFrom, timeoutSeconds: 1 },
        (type, obj: { code?: number }) => {
          if (type === "ERROR") code = obj.code;
        },
        (err: { statusCode?: number } | null) => resolve(code === 410 || err?.statusCode === 410),
      );
    });
  });
  inf.start();
  await waitFor("relisted", () => inf.listCount >= 2 && inf.get("gone", "later") !== undefined);
  await admin.create(CoreTypes.ConfigMap, configMap("gone", "y", "2"));
  await waitFor("watching again after the relist", () => inf.get("gone", "y") !== undefined);
  t.equal(inf.listCount, 2, "the first list and one relist");
});

/** Reconcile passes an operator has run (from its own metrics). */
async function reconciles(op: Operator): Promise<number> {
  const m = await op.manager.opts.metrics.reconciles.get();
  return m.values.reduce((sum, v) => sum + v.value, 0);
}

function enginePool(ns: string, name: string): EnginePool {
  return {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name, namespace: ns },
    spec: { model: { path: "/m.gguf" }, runtime: { backend: "llama-cpp" } },
  };
}

const LE_FLAGS = ["--namespace", "le", "--leader-elect", "--lease-namespace", "le", "--lease-duration-ms", "2000", "--renew-deadline-ms", "1500", "--retry-period-ms", "200"];

t.test("leader election: one operator reconciles; when it stops, the standby takes over", async (t) => {
  await namespace("le");
  const access = await operatorAccount(cp, "interlace-system", "interlace");
  const a = startTestOperator([...LE_FLAGS, "--identity", "op-a"], access, testLogger("op-a"), { probes: false });
  const b = startTestOperator([...LE_FLAGS, "--identity", "op-b"], access, testLogger("op-b"), { probes: false });
  t.teardown(() => Promise.all([a.stop(), b.stop()]));
  await a.start();
  await waitFor("a leads", () => a.manager.isLeader());
  await b.start();
  await admin.create(EnginePoolKind, enginePool("le", "one"));
  await waitFor("reconciled by the leader", async () => (await admin.get<V1Deployment>(CoreTypes.Deployment, "le", "one-engine")) !== null);
  t.ok(a.manager.isLeader());
  t.notOk(b.manager.isLeader(), "the standby does not lead");
  // The pass that created the Deployment is counted when it finishes (after its status write).
  await waitFor("the leader's pass counted", async () => (await reconciles(a)) > 0);
  t.equal(await reconciles(b), 0, "the standby reconciled nothing");

  const lease = await admin.get<KubernetesObject & { spec?: { holderIdentity?: string } }>(CoreTypes.Lease, "le", "interlace-operator");
  t.equal(lease?.spec?.holderIdentity, "op-a", "the leader holds the lease");

  await a.stop();
  await waitFor("b takes over", () => b.manager.isLeader(), 10_000);
  await admin.create(EnginePoolKind, enginePool("le", "two"));
  await waitFor("reconciled by the new leader", async () => (await admin.get(CoreTypes.Deployment, "le", "two-engine")) !== null);
  await waitFor("the new leader's pass counted", async () => (await reconciles(b)) > 0);
  const after = await admin.get<KubernetesObject & { spec?: { holderIdentity?: string; leaseTransitions?: number } }>(CoreTypes.Lease, "le", "interlace-operator");
  t.equal(after?.spec?.holderIdentity, "op-b", "the new leader holds the lease");
});

t.test("leader election: a lease left by a crashed holder is taken over after it expires", async (t) => {
  await namespace("crash");
  const now = new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
  await admin.create(CoreTypes.Lease, {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: "interlace-operator", namespace: "crash" },
    spec: { holderIdentity: "ghost", leaseDurationSeconds: 2, acquireTime: now, renewTime: now, leaseTransitions: 0 },
  } as KubernetesObject);
  const access = await operatorAccount(cp, "interlace-system", "interlace");
  const flags = LE_FLAGS.map((f) => (f === "le" ? "crash" : f));
  const c = startTestOperator([...flags, "--identity", "op-c"], access, testLogger("op-c"), { probes: false });
  t.teardown(() => c.stop());
  const started = Date.now();
  await c.start();
  await waitFor("c takes the expired lease", () => c.manager.isLeader(), 15_000);
  t.ok(Date.now() - started >= 1500, "not before the ghost's lease could have expired");
  const lease = await admin.get<KubernetesObject & { spec?: { holderIdentity?: string; leaseTransitions?: number } }>(CoreTypes.Lease, "crash", "interlace-operator");
  t.equal(lease?.spec?.holderIdentity, "op-c");
  t.equal(lease?.spec?.leaseTransitions, 1);
});

t.test("the operator process: flags, probes, and a graceful SIGTERM that releases the lease", async (t) => {
  await namespace("proc");
  await operatorAccount(cp, "interlace-system", "interlace");
  const kubeconfig = await cp.kubeconfigPathFor("interlace-system", "interlace");
  const args = [
    "--import",
    "tsx",
    path.join(ROOT, "operator/src/main.ts"),
    "--kubeconfig",
    kubeconfig,
    "--namespace",
    "proc",
    "--leader-elect",
    "--lease-namespace",
    "proc",
    "--identity",
    "proc-op",
    "--metrics-port",
    "0",
    "--metrics-host",
    "127.0.0.1",
    "--lease-duration-ms",
    "3000",
    "--renew-deadline-ms",
    "2000",
    "--retry-period-ms",
    "300",
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LOG_LEVEL: "info" } });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let output = "";
  let port = 0;
  child.stdout.on("data", (d: Buffer) => {
    output += d.toString();
    const m = /"metricsPort":(\d+)/.exec(output);
    if (m) port = Number(m[1]);
  });
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  await waitFor("operator started", () => port > 0 || child.exitCode !== null, 60_000);
  t.equal(child.exitCode, null, output.slice(-2000));
  await waitFor("ready", async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200);
  await waitFor("leading", async () => /interlace_operator_leader 1/.test(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()));
  await admin.create(EnginePoolKind, enginePool("proc", "p"));
  await waitFor("reconciled by the process", async () => (await admin.get(CoreTypes.Deployment, "proc", "p-engine")) !== null);
  child.kill("SIGTERM");
  t.equal(await exited, 0, "clean exit");
  const lease = await admin.get<KubernetesObject & { spec?: { holderIdentity?: string | null } }>(CoreTypes.Lease, "proc", "interlace-operator");
  t.notOk(lease?.spec?.holderIdentity, "the lease was released on shutdown");
});
