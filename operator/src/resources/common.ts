/**
 * @module What every child object shares: the build options that come from
 * the operator's config, the label set, names derived from the owner, the
 * controller owner reference and the restricted pod security settings.
 */
import type { PickerPlacement } from "../config.js";
import type { KubernetesObject, V1Container, V1NetworkPolicyPeer, V1OwnerReference, V1PodSecurityContext, V1SecurityContext, V1Service } from "@kubernetes/client-node";

/** Operator-wide settings the builders need (one-to-one with operator flags). */
export interface BuildOptions {
  /** Default image for engine and tool-runner pods (a pool's `spec.image` overrides it). */
  image: string;
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  /** NATS URL given to engine and runner pods. */
  natsUrl: string;
  /** Replicas of the streams and buckets the pods create (`INTERLACE_NATS_REPLICAS`; 3 on the chart's cluster). */
  natsReplicas?: number;
  /** Base URL of the session router; an AgentApp's endpoint is `<routerUrl>/v1/apps/<ns>/<name>`. */
  routerUrl: string;
  /** Placement flags of the endpoint pickers (absent: the picker's defaults, which are the router's). */
  picker?: PickerPlacement;
  /** Render a NetworkPolicy per pool (network-policy.ts); absent: none (the chart's per-namespace policies only). */
  networkPolicy?: NetworkPolicyOptions;
}

/** Where the release's router, operator and NATS pods are, for the per-pool NetworkPolicies. */
export interface NetworkPolicyOptions {
  /** The release namespace (the operator's). */
  releaseNamespace: string;
  /** The Helm release: the `app.kubernetes.io/instance` label of its router, operator and NATS pods. */
  release: string;
  /** Where pods resolve names (port 53); absent: the `k8s-app: kube-dns` pods of any namespace. */
  dnsPeers?: V1NetworkPolicyPeer[];
}

/** The field manager every apply of the operator uses. */
export const FIELD_MANAGER = "interlace-operator";
export const MANAGED_BY = "interlace-operator";
/** Selects every child the operator manages (its child informers filter on it). */
export const MANAGED_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY}`;

/** The HTTP port engine and runner containers listen on (API + probes + metrics). */
export const POD_PORT = 8080;

/** An owner as the builders see it: any object with name, namespace and uid. */
export interface Owner extends KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: { name?: string; namespace?: string; uid?: string; generation?: number };
}

/** Labels that select a component's pods (stable across spec changes: Deployment selectors are immutable). */
export function selectorLabels(component: string, instance: string): Record<string, string> {
  return {
    "app.kubernetes.io/name": "interlace",
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/instance": instance,
  };
}

/** Selector labels plus ownership labels, for every child object. */
export function childLabels(owner: Owner, component: string): Record<string, string> {
  return {
    ...selectorLabels(component, owner.metadata.name ?? ""),
    "app.kubernetes.io/managed-by": MANAGED_BY,
    [`interlace.dev/${owner.kind.toLowerCase()}`]: owner.metadata.name ?? "",
  };
}

/** The controller owner reference: ties the child's lifetime to its owner (garbage collection). */
export function ownerReference(owner: Owner): V1OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Child metadata: name, owner's namespace, labels and owner reference. */
export function childMeta(owner: Owner, name: string, component: string): {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  ownerReferences: V1OwnerReference[];
} {
  return { name, namespace: owner.metadata.namespace ?? "default", labels: childLabels(owner, component), ownerReferences: [ownerReference(owner)] };
}

/** Pods run as non-root with a read-only root filesystem and no capabilities. */
export const POD_SECURITY: V1PodSecurityContext = {
  runAsNonRoot: true,
  runAsUser: 1000,
  runAsGroup: 1000,
  fsGroup: 1000,
  seccompProfile: { type: "RuntimeDefault" },
};

export const CONTAINER_SECURITY: V1SecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ["ALL"] },
};

/** The HTTP probes every Interlace process serves. */
export function httpProbes(): Pick<V1Container, "readinessProbe" | "livenessProbe"> {
  return {
    readinessProbe: { httpGet: { path: "/readyz", port: "http" }, periodSeconds: 5, failureThreshold: 3 },
    livenessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 10, failureThreshold: 6, initialDelaySeconds: 10 },
  };
}

/** The pod's own name, from the downward API. */
export const POD_NAME_ENV = { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } };
/** The pod's IP: engines advertise `http://$POD_IP:8080` in their heartbeats (the router places by pod). */
export const POD_IP_ENV = { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } };

/** The root filesystem is read-only: anything that writes under $HOME (caches) writes to the /tmp emptyDir. */
export const HOME_ENV = { name: "HOME", value: "/tmp" };

/** The NATS settings engine and runner pods read from their environment. */
export function natsEnv(opts: BuildOptions): { name: string; value: string }[] {
  return opts.natsReplicas !== undefined && opts.natsReplicas > 1 ? [{ name: "INTERLACE_NATS_REPLICAS", value: String(opts.natsReplicas) }] : [];
}

/**
 * A headless Service over a component's pods, port `http`: DNS returns every
 * ready pod (the router picks an engine), and a ServiceMonitor scrapes /metrics.
 */
export function buildHeadlessService(owner: Owner, name: string, component: string): V1Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: childMeta(owner, name, component),
    spec: {
      clusterIP: "None",
      selector: selectorLabels(component, owner.metadata.name ?? ""),
      ports: [{ name: "http", port: POD_PORT, targetPort: "http", protocol: "TCP" }],
    },
  };
}
