/**
 * @module Status bookkeeping shared by the reconcilers: conditions that keep
 * their lastTransitionTime while unchanged, deployment availability, a
 * semantic comparison so status is written only when it changed, and the one
 * status write at the end of a pass (server-side apply on the status
 * subresource under the operator's field manager).
 */
import type { KubernetesObject, V1Deployment } from "@kubernetes/client-node";
import { ConditionType, Reason, type Condition, type ConditionStatus } from "../api/index.js";
import { FIELD_MANAGER } from "../resources/index.js";
import type { KubeClient, ResourceType } from "../runtime/index.js";

/** A condition as a reconciler decides it (time and generation are filled in). */
export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/**
 * The new condition list: each input replaces the condition of its type;
 * lastTransitionTime changes only when the status flips.
 */
export function mergeConditions(existing: readonly Condition[] | undefined, inputs: readonly ConditionInput[], generation: number | undefined, now: Date): Condition[] {
  const old = new Map((existing ?? []).map((c) => [c.type, c]));
  return inputs.map((c) => {
    const prev = old.get(c.type);
    return {
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    };
  });
}

/** The status of one condition type, or undefined. */
export function conditionStatus(conditions: readonly Condition[] | undefined, type: string): ConditionStatus | undefined {
  return conditions?.find((c) => c.type === type)?.status;
}

/** True when the object reports Ready=True for its current generation. */
export function isReady(obj: { metadata: { generation?: number }; status?: { observedGeneration?: number; conditions?: Condition[] } } | undefined): boolean {
  if (!obj) return false;
  if (obj.status?.observedGeneration !== obj.metadata.generation) return false;
  return conditionStatus(obj.status?.conditions, ConditionType.Ready) === "True";
}

/** Canonical JSON (sorted keys) for semantic equality of plain data. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return v;
  });
}

/** Availability of a Deployment as its controller reports it. */
export interface Availability {
  desired: number;
  replicas: number;
  available: number;
  /** The Deployment controller has seen the latest spec and every desired replica is updated and available. */
  complete: boolean;
}

export function deploymentAvailability(dep: V1Deployment): Availability {
  const desired = dep.spec?.replicas ?? 1;
  const st = dep.status ?? {};
  const available = st.availableReplicas ?? 0;
  const observed = (st.observedGeneration ?? 0) >= (dep.metadata?.generation ?? 0);
  const complete = observed && (st.updatedReplicas ?? 0) >= desired && available >= desired && (st.replicas ?? 0) <= desired;
  return { desired, replicas: st.replicas ?? 0, available, complete };
}

/** Ready / Progressing / Degraded for a pool whose only moving part is one Deployment. */
export function rolloutConditions(av: Availability, what: string): ConditionInput[] {
  if (av.complete) {
    return [
      av.desired === 0
        ? { type: ConditionType.Ready, status: "True", reason: Reason.ScaledToZero, message: `scaled to zero ${what}` }
        : { type: ConditionType.Ready, status: "True", reason: Reason.Available, message: `${av.available}/${av.desired} ${what} available` },
      { type: ConditionType.Progressing, status: "False", reason: Reason.RolloutComplete, message: "the latest spec is rolled out" },
      { type: ConditionType.Degraded, status: "False", reason: Reason.AsExpected, message: "" },
    ];
  }
  return [
    { type: ConditionType.Ready, status: "False", reason: Reason.ReplicasUnavailable, message: `${av.available}/${av.desired} ${what} available` },
    { type: ConditionType.Progressing, status: "True", reason: Reason.RolloutInProgress, message: `waiting for ${what} to become available` },
    { type: ConditionType.Degraded, status: "False", reason: Reason.AsExpected, message: "" },
  ];
}

/** Conditions for a failure that stops progress (bad spec, failed apply, missing reference). */
export function degradedConditions(reason: string, message: string): ConditionInput[] {
  return [
    { type: ConditionType.Ready, status: "False", reason, message },
    { type: ConditionType.Progressing, status: "False", reason, message },
    { type: ConditionType.Degraded, status: "True", reason, message },
  ];
}

/**
 * Writes `status` if its `managedKeys` differ from what the object has; true when written.
 * Server-side apply on the status subresource: the operator owns all of status.
 */
export async function writeStatusIfChanged(
  client: Pick<KubeClient, "apply">,
  type: ResourceType,
  obj: KubernetesObject & { status?: unknown },
  status: Record<string, unknown>,
  managedKeys: readonly string[],
): Promise<boolean> {
  // Compare only the fields this operator owns: others (the router's live
  // counters) may write their own status fields.
  const current = (obj.status ?? {}) as Record<string, unknown>;
  const pick = (s: Record<string, unknown>): Record<string, unknown> =>
    Object.fromEntries(managedKeys.filter((k) => s[k] !== undefined).map((k) => [k, s[k]]));
  if (canonical(pick(current)) === canonical(pick(status))) return false;
  await client.apply(
    type,
    { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name: obj.metadata?.name, namespace: obj.metadata?.namespace }, status } as KubernetesObject,
    { fieldManager: FIELD_MANAGER, force: true, subresource: "status" },
  );
  return true;
}
