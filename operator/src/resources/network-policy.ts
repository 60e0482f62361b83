/**
 * @module Per-pool NetworkPolicies, rendered by the operator in the pool's
 * namespace (so every app namespace is covered, with no list to keep in the
 * chart). Both directions are closed except:
 *
 * - engines: ingress on the pod port from this release's router and operator
 *   (release namespace), the pool's own endpoint pickers (same namespace) and
 *   Prometheus; egress to NATS (release namespace, 4222), DNS and the pool's
 *   `spec.egress` (an `openai` backend's upstream, a model server: CIDR
 *   blocks or in-cluster pods);
 * - tool runners: ingress on the pod port from Prometheus only (calls come
 *   from NATS); egress to NATS, DNS and the pool's `spec.egress` (the http
 *   and mcp tools' servers).
 *
 * Kubelet probes come from the node, which policies do not filter. Pure:
 * the reconcilers apply what these return.
 */
import type { V1NetworkPolicy, V1NetworkPolicyEgressRule, V1NetworkPolicyPeer, V1NetworkPolicyPort } from "@kubernetes/client-node";
import type { EgressRule, EnginePool, ToolPool } from "../api/index.js";
import { childMeta, POD_PORT, selectorLabels, type NetworkPolicyOptions, type Owner } from "./common.js";
import { ENGINE_COMPONENT, engineChildName } from "./engine-pool.js";
import { PICKER_COMPONENT } from "./endpoint-picker.js";
import { TOOLRUNNER_COMPONENT, toolPoolChildName } from "./tool-pool.js";

/** The NATS client port. */
export const NATS_CLIENT_PORT = 4222;

/** Pods of this release in the release namespace (the chart's selector labels). */
function releasePods(o: NetworkPolicyOptions, component: string): V1NetworkPolicyPeer {
  return {
    namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": o.releaseNamespace } },
    podSelector: { matchLabels: { "app.kubernetes.io/name": "interlace", "app.kubernetes.io/instance": o.release, "app.kubernetes.io/component": component } },
  };
}

/** Prometheus pods in any namespace (the Prometheus Operator's and the Prometheus chart's label; the chart's default `prometheusPeers`). */
const PROMETHEUS: V1NetworkPolicyPeer = { namespaceSelector: {}, podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } } };

/** Cluster DNS by default: the `k8s-app: kube-dns` pods (CoreDNS and kube-dns in kubeadm, kind, GKE, EKS and AKS clusters). */
export const KUBE_DNS_PEER: V1NetworkPolicyPeer = { namespaceSelector: {}, podSelector: { matchLabels: { "k8s-app": "kube-dns" } } };

/** Port 53 of the cluster's DNS (`dnsPeers`, else kube-dns pods). */
function dns(o: NetworkPolicyOptions): V1NetworkPolicyEgressRule {
  return {
    to: o.dnsPeers ?? [KUBE_DNS_PEER],
    ports: [
      { port: 53, protocol: "UDP" },
      { port: 53, protocol: "TCP" },
    ],
  };
}

/** A declared destination as a peer: a block, or pods (a peer without a namespace selector is the pool's own namespace). */
function declaredPeer(r: EgressRule): V1NetworkPolicyPeer {
  if (r.cidr !== undefined) return { ipBlock: { cidr: r.cidr, ...(r.except !== undefined && r.except.length > 0 ? { except: r.except } : {}) } };
  return {
    ...(r.namespace !== undefined ? { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": r.namespace } } } : {}),
    podSelector: r.podLabels !== undefined ? { matchLabels: r.podLabels } : {},
  };
}

/** The pool's declared destinations, one rule each. */
function declaredEgress(rules: readonly EgressRule[] | undefined): V1NetworkPolicyEgressRule[] {
  return (rules ?? []).map((r) => ({
    to: [declaredPeer(r)],
    ...(r.ports !== undefined && r.ports.length > 0
      ? { ports: r.ports.map((p): V1NetworkPolicyPort => ({ port: p.port, protocol: p.protocol ?? "TCP", ...(p.endPort !== undefined ? { endPort: p.endPort } : {}) })) }
      : {}),
  }));
}

function policy(owner: Owner, name: string, component: string, ingress: V1NetworkPolicyPeer[], egress: readonly EgressRule[] | undefined, o: NetworkPolicyOptions): V1NetworkPolicy {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: childMeta(owner, name, component),
    spec: {
      podSelector: { matchLabels: selectorLabels(component, owner.metadata.name ?? "") },
      policyTypes: ["Ingress", "Egress"],
      ingress: ingress.length > 0 ? [{ _from: ingress, ports: [{ port: POD_PORT, protocol: "TCP" }] }] : [],
      egress: [{ to: [releasePods(o, "nats")], ports: [{ port: NATS_CLIENT_PORT, protocol: "TCP" }] }, dns(o), ...declaredEgress(egress)],
    },
  };
}

/** The engine pods' policy (named like their Deployment). */
export function buildEngineNetworkPolicy(pool: EnginePool, o: NetworkPolicyOptions): V1NetworkPolicy {
  const ownPickers: V1NetworkPolicyPeer = { podSelector: { matchLabels: selectorLabels(PICKER_COMPONENT, pool.metadata.name ?? "") } };
  return policy(pool, engineChildName(pool), ENGINE_COMPONENT, [releasePods(o, "router"), releasePods(o, "operator"), ownPickers, PROMETHEUS], pool.spec.egress, o);
}

/** The tool-runner pods' policy (named like their Deployment). */
export function buildToolRunnerNetworkPolicy(pool: ToolPool, o: NetworkPolicyOptions): V1NetworkPolicy {
  return policy(pool, toolPoolChildName(pool), TOOLRUNNER_COMPONENT, [PROMETHEUS], pool.spec.egress, o);
}
