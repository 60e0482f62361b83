/**
 * The per-pool NetworkPolicy builders (operator/src/resources/network-policy.ts):
 * engines take the pod port only from the release's router and operator, the
 * pool's own pickers and Prometheus; runners only from Prometheus; both may
 * reach only NATS in the release namespace, cluster DNS and what the pool
 * declares in `spec.egress` (blocks or in-cluster pods); each policy selects exactly its pool's pods and
 * is owned by the pool.
 */
import t from "tap";
import type { EnginePool, ToolPool } from "../../operator/src/api/index.js";
import { buildEngineDeployment, buildEngineNetworkPolicy, buildToolRunnerDeployment, buildToolRunnerNetworkPolicy, renderRunnerConfig } from "../../operator/src/resources/index.js";

const OPTS = { releaseNamespace: "interlace-system", release: "prod" };
const enginePool: EnginePool = {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "EnginePool",
  metadata: { name: "chat", namespace: "team-a", uid: "u-engine" },
  spec: { replicas: 1, runtime: { backend: "openai", upstreamURL: "http://10.1.2.3:8000", upstreamModel: "m" }, egress: [{ cidr: "10.1.2.3/32", ports: [{ port: 8000 }] }] },
};
const toolPool: ToolPool = {
  apiVersion: "interlace.dev/v1alpha1",
  kind: "ToolPool",
  metadata: { name: "search", namespace: "team-a", uid: "u-tools" },
  spec: {
    tools: [{ name: "echo", description: "echo", parameters: { type: "object" }, builtin: { name: "echo" } }],
    egress: [{ cidr: "203.0.113.0/24", except: ["203.0.113.128/25"], ports: [{ port: 443 }, { port: 8000, endPort: 8100, protocol: "TCP" }] }, { cidr: "2001:db8::/32" }],
  },
};
const BUILD = { image: "interlace:dev", natsUrl: "nats://nats:4222", routerUrl: "http://router" };
const release = (component: string): unknown => ({
  namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "interlace-system" } },
  podSelector: { matchLabels: { "app.kubernetes.io/name": "interlace", "app.kubernetes.io/instance": "prod", "app.kubernetes.io/component": component } },
});
const NATS = { to: [release("nats")], ports: [{ port: 4222, protocol: "TCP" }] };
const DNS = { to: [{ namespaceSelector: {}, podSelector: { matchLabels: { "k8s-app": "kube-dns" } } }], ports: [{ port: 53, protocol: "UDP" }, { port: 53, protocol: "TCP" }] };
const PROMETHEUS = { namespaceSelector: {}, podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } } };

t.test("engine pods: ingress from the release's router and operator, the pool's pickers and Prometheus; egress to NATS, DNS and the declared upstream", async (t) => {
  const p = buildEngineNetworkPolicy(enginePool, OPTS);
  t.match(p.metadata, { name: "chat-engine", namespace: "team-a", ownerReferences: [{ kind: "EnginePool", name: "chat", uid: "u-engine", controller: true }] });
  t.same(p.metadata?.labels?.["app.kubernetes.io/managed-by"], "interlace-operator", "found by the operator's child informer (drift is put back)");
  t.same(p.spec?.podSelector?.matchLabels, buildEngineDeployment(enginePool, BUILD).spec?.selector.matchLabels, "selects exactly the pool's engine pods");
  t.same(p.spec?.policyTypes, ["Ingress", "Egress"], "both directions closed by default");
  t.same(p.spec?.ingress, [
    {
      _from: [release("router"), release("operator"), { podSelector: { matchLabels: { "app.kubernetes.io/name": "interlace", "app.kubernetes.io/component": "endpoint-picker", "app.kubernetes.io/instance": "chat" } } }, PROMETHEUS],
      ports: [{ port: 8080, protocol: "TCP" }],
    },
  ]);
  t.same(p.spec?.egress, [NATS, DNS, { to: [{ ipBlock: { cidr: "10.1.2.3/32" } }], ports: [{ port: 8000, protocol: "TCP" }] }]);
  const bare = buildEngineNetworkPolicy({ ...enginePool, spec: { ...enginePool.spec, egress: undefined } } as unknown as EnginePool, OPTS);
  t.same(bare.spec?.egress, [NATS, DNS], "nothing declared: NATS and DNS only");
});

t.test("tool runners: ingress from Prometheus only; egress to NATS, DNS and each declared block", async (t) => {
  const p = buildToolRunnerNetworkPolicy(toolPool, OPTS);
  t.match(p.metadata, { name: "search-tools", namespace: "team-a", ownerReferences: [{ kind: "ToolPool", name: "search", uid: "u-tools", controller: true }] });
  const rendered = renderRunnerConfig(toolPool);
  if (!rendered.ok) throw new Error(rendered.message);
  t.same(p.spec?.podSelector?.matchLabels, buildToolRunnerDeployment(toolPool, rendered.config, BUILD).spec?.selector.matchLabels, "selects exactly the pool's runner pods");
  t.same(p.spec?.ingress, [{ _from: [PROMETHEUS], ports: [{ port: 8080, protocol: "TCP" }] }], "calls come from NATS: no one else connects in");
  t.same(p.spec?.egress, [
    NATS,
    DNS,
    { to: [{ ipBlock: { cidr: "203.0.113.0/24", except: ["203.0.113.128/25"] } }], ports: [{ port: 443, protocol: "TCP" }, { port: 8000, protocol: "TCP", endPort: 8100 }] },
    { to: [{ ipBlock: { cidr: "2001:db8::/32" } }] },
  ]);
});

t.test("in-cluster destinations: pods of a namespace, pods by label in the pool's own namespace, or both", async (t) => {
  const p = buildEngineNetworkPolicy(
    { ...enginePool, spec: { ...enginePool.spec, egress: [{ namespace: "models", ports: [{ port: 80 }] }, { podLabels: { app: "vllm" } }, { namespace: "ml", podLabels: { app: "tei" }, ports: [{ port: 8080, protocol: "TCP" }] }] } },
    OPTS,
  );
  t.same(p.spec?.egress?.slice(2), [
    { to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "models" } }, podSelector: {} }], ports: [{ port: 80, protocol: "TCP" }] },
    { to: [{ podSelector: { matchLabels: { app: "vllm" } } }] },
    { to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ml" } }, podSelector: { matchLabels: { app: "tei" } } }], ports: [{ port: 8080, protocol: "TCP" }] },
  ]);
});

t.test("DNS elsewhere (NodeLocal DNSCache, a host process): the configured peers instead of kube-dns pods", async (t) => {
  const p = buildToolRunnerNetworkPolicy(toolPool, { ...OPTS, dnsPeers: [{ ipBlock: { cidr: "169.254.20.10/32" } }] });
  t.same(p.spec?.egress?.[1], { to: [{ ipBlock: { cidr: "169.254.20.10/32" } }], ports: [{ port: 53, protocol: "UDP" }, { port: 53, protocol: "TCP" }] });
});

t.test("the peers follow the release", async (t) => {
  const p = buildToolRunnerNetworkPolicy(toolPool, { releaseNamespace: "ops", release: "staging" });
  t.match(p.spec?.egress?.[0], { to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ops" } }, podSelector: { matchLabels: { "app.kubernetes.io/instance": "staging" } } }] });
});
