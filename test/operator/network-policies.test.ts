/**
 * Per-pool NetworkPolicies against a real etcd + kube-apiserver (RBAC on,
 * the chart's ClusterRole) with kube-controller-manager's garbage collector:
 * an operator started with `--network-policy-release` renders one policy per
 * EnginePool and ToolPool in the pool's namespace, follows a change to the
 * pool's `spec.egress`, puts a hand-edited policy back, and the policy goes
 * with its pool. The CRD schema refuses an egress block that is not a CIDR,
 * a rule naming both a block and pods (or neither) and a port range that
 * runs backwards.
 */
import t from "tap";
import type { KubernetesObject, V1NetworkPolicy } from "@kubernetes/client-node";
import { controlPlaneFor } from "../helpers/control-plane.js";
import { EnginePoolKind, ToolPoolKind, type EnginePool, type ToolPool } from "../../operator/src/api/index.js";
import { CoreTypes, KubeClient } from "../../operator/src/runtime/index.js";
import { adminAccess, installGeneratedCrds, operatorAccount, startTestOperator, testLogger, waitFor } from "./helpers.js";

t.setTimeout(300_000);
const RELEASE_NS = "interlace-system";
const NS = "team-a";

const cp = await controlPlaneFor(t, { garbageCollector: true });
const admin = new KubeClient(adminAccess(cp));
await installGeneratedCrds(admin);
for (const ns of [RELEASE_NS, NS]) await admin.create(CoreTypes.Namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }).catch(() => undefined);
const operator = startTestOperator(
  ["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--network-policy-release", "prod", "--credentials-namespace", RELEASE_NS],
  await operatorAccount(cp, RELEASE_NS, "interlace"),
  testLogger("operator"),
);
t.teardown(() => operator.stop());
await operator.start();

const policy = (name: string): Promise<V1NetworkPolicy | null> => admin.get<V1NetworkPolicy>(CoreTypes.NetworkPolicy, NS, name);
const toolPool = (egress: ToolPool["spec"]["egress"]): ToolPool => ({
  apiVersion: "interlace.dev/v1alpha1",
  kind: "ToolPool",
  metadata: { name: "search", namespace: NS },
  spec: { tools: [{ name: "fetch", description: "fetch", parameters: { type: "object" }, http: { url: "https://203.0.113.7/fetch" } }], ...(egress !== undefined ? { egress } : {}) },
});

t.test("the CRD schema refuses a block that is not a CIDR and a backwards port range", async (t) => {
  const refused = async (egress: unknown): Promise<string> => {
    try {
      await admin.create(ToolPoolKind, { ...toolPool(undefined), metadata: { name: "bad", namespace: NS }, spec: { ...toolPool(undefined).spec, egress } } as KubernetesObject);
      await admin.delete(ToolPoolKind, NS, "bad");
      return "accepted";
    } catch (err) {
      return String((err as Error).message);
    }
  };
  t.match(await refused([{ cidr: "203.0.113.7" }]), /must be a CIDR block/, "an address without a prefix length");
  t.match(await refused([{ cidr: "example.com/24" }]), /must be a CIDR block/, "a name");
  t.match(await refused([{ cidr: "203.0.113.0/24", ports: [{ port: 9000, endPort: 8000 }] }]), /endPort must not be below port/);
  t.match(await refused([{ cidr: "203.0.113.0/24", ports: [{ port: 70000 }] }]), /65535/);
  t.match(await refused([{ cidr: "203.0.113.0/24", namespace: "models" }]), /either a cidr or pods/, "a block and pods in one rule");
  t.match(await refused([{ ports: [{ port: 443 }] }]), /either a cidr or pods/, "no destination at all");
  t.match(await refused([{ namespace: "models", except: ["10.0.0.0/8"] }]), /except is only valid with cidr/);
  t.equal(await refused([{ namespace: "models", podLabels: { app: "server" }, ports: [{ port: 80 }] }]), "accepted", "pods by namespace and label (control)");
});

t.test("one policy per pool, created, updated with the pool's egress, put back after a hand edit, and gone with its pool", async (t) => {
  await admin.create(EnginePoolKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "chat", namespace: NS },
    spec: { replicas: 1, runtime: { backend: "openai", upstreamURL: "http://10.1.2.3:8000", upstreamModel: "m" }, egress: [{ cidr: "10.1.2.3/32", ports: [{ port: 8000 }] }] },
  } satisfies EnginePool as KubernetesObject);
  await admin.create(ToolPoolKind, toolPool([{ cidr: "203.0.113.0/24", ports: [{ port: 443 }] }]) as KubernetesObject);

  const engines = await waitFor("the engine pool's policy", () => policy("chat-engine"));
  t.same(engines.spec?.policyTypes, ["Ingress", "Egress"]);
  t.same(engines.spec?.podSelector?.matchLabels, { "app.kubernetes.io/name": "interlace", "app.kubernetes.io/component": "engine", "app.kubernetes.io/instance": "chat" });
  t.same(
    engines.spec?.ingress?.[0]?._from?.map((p) => p.podSelector?.matchLabels?.["app.kubernetes.io/component"] ?? p.podSelector?.matchLabels?.["app.kubernetes.io/name"]),
    ["router", "operator", "endpoint-picker", "prometheus"],
    "ingress: the release's router and operator, the pool's pickers, Prometheus",
  );
  t.same(engines.spec?.egress?.at(-1), { to: [{ ipBlock: { cidr: "10.1.2.3/32" } }], ports: [{ port: 8000, protocol: "TCP" }] }, "egress: the declared upstream");
  t.equal(engines.metadata?.ownerReferences?.[0]?.kind, "EnginePool");

  const tools = await waitFor("the tool pool's policy", () => policy("search-tools"));
  t.same(tools.spec?.egress?.slice(2), [{ to: [{ ipBlock: { cidr: "203.0.113.0/24" } }], ports: [{ port: 443, protocol: "TCP" }] }], "egress: NATS, DNS, then the declared block");
  t.match(tools.spec?.egress?.[0], { to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": RELEASE_NS } }, podSelector: { matchLabels: { "app.kubernetes.io/instance": "prod", "app.kubernetes.io/component": "nats" } } }], ports: [{ port: 4222 }] });

  // Updated: the pool's egress changes.
  await admin.mergePatch(ToolPoolKind, NS, "search", { spec: { egress: [{ cidr: "198.51.100.0/24", ports: [{ port: 8443 }] }] } });
  const updated = await waitFor("the updated egress", () => policy("search-tools").then((p) => (p?.spec?.egress?.[2]?.to?.[0]?.ipBlock?.cidr === "198.51.100.0/24" ? p : undefined)));
  t.equal(updated.spec?.egress?.length, 3, "the old block is gone, the new one in its place");
  await admin.mergePatch(ToolPoolKind, NS, "search", { spec: { egress: null } });
  await waitFor("no declared egress left", () => policy("search-tools").then((p) => (p?.spec?.egress?.length === 2 ? p : undefined)));

  // A hand edit that opens the runners to everyone is put back.
  await admin.mergePatch(CoreTypes.NetworkPolicy, NS, "search-tools", { spec: { ingress: [{}] } });
  const restored = await waitFor("the hand edit undone", () => policy("search-tools").then((p) => (p?.spec?.ingress?.[0]?._from?.length === 1 ? p : undefined)));
  t.equal(restored.spec?.ingress?.[0]?._from?.[0]?.podSelector?.matchLabels?.["app.kubernetes.io/name"], "prometheus", "Prometheus only again");

  // Garbage-collected with the pool (owner references; the ToolPool's finalizer runs first).
  await admin.delete(ToolPoolKind, NS, "search");
  await admin.delete(EnginePoolKind, NS, "chat");
  await waitFor("the tool pool's policy gone", async () => (await policy("search-tools")) === null);
  await waitFor("the engine pool's policy gone", async () => (await policy("chat-engine")) === null);
  t.pass("both policies went with their pools");
});
