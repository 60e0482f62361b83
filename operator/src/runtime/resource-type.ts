/**
 * @module How the runtime addresses a kind on the API server: group, version,
 * plural and scope. A static table instead of discovery: the operator only
 * touches the kinds listed here, and a static table needs no discovery RBAC.
 */

/** One kind's REST coordinates. */
export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** `apps/v1`, or `v1` for the core group. */
export function apiVersionOf(type: ResourceType): string {
  return type.group === "" ? type.version : `${type.group}/${type.version}`;
}

/** `/api/v1` or `/apis/<group>/<version>`. */
export function groupVersionPath(type: ResourceType): string {
  return type.group === "" ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
}

/** The collection path (namespace omitted for a cluster-wide list of a namespaced kind). */
export function collectionPath(type: ResourceType, namespace?: string): string {
  const ns = type.namespaced && namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  return `${groupVersionPath(type)}${ns}/${type.plural}`;
}

/** The built-in kinds the operator creates or reads. */
export const CoreTypes = {
  Deployment: { group: "apps", version: "v1", kind: "Deployment", plural: "deployments", namespaced: true },
  Service: { group: "", version: "v1", kind: "Service", plural: "services", namespaced: true },
  ConfigMap: { group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true },
  Secret: { group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: true },
  PodDisruptionBudget: { group: "policy", version: "v1", kind: "PodDisruptionBudget", plural: "poddisruptionbudgets", namespaced: true },
  NetworkPolicy: { group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy", plural: "networkpolicies", namespaced: true },
  Lease: { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: true },
  Event: { group: "", version: "v1", kind: "Event", plural: "events", namespaced: true },
  Namespace: { group: "", version: "v1", kind: "Namespace", plural: "namespaces", namespaced: false },
  Pod: { group: "", version: "v1", kind: "Pod", plural: "pods", namespaced: true },
} as const satisfies Record<string, ResourceType>;
