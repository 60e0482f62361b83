/**
 * @module Events on the transitions users care about: a resource became
 * Ready, stopped being Ready, or became Degraded (with the reason). Emitted
 * only after a status write that changed the condition, so a steady state
 * produces no events.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import { ConditionType, type Condition } from "../api/index.js";
import type { EventRecorder } from "../runtime/index.js";

export async function recordTransitions(
  recorder: EventRecorder,
  obj: KubernetesObject,
  before: readonly Condition[] | undefined,
  after: readonly Condition[],
): Promise<void> {
  const find = (list: readonly Condition[] | undefined, type: string): Condition | undefined => list?.find((c) => c.type === type);
  const readyBefore = find(before, ConditionType.Ready);
  const readyAfter = find(after, ConditionType.Ready);
  if (readyAfter && readyAfter.status !== readyBefore?.status) {
    if (readyAfter.status === "True") await recorder.record(obj, "Normal", "Ready", readyAfter.message || "ready");
    else if (readyBefore?.status === "True") await recorder.record(obj, "Warning", "NotReady", `${readyAfter.reason}: ${readyAfter.message}`);
  }
  const degBefore = find(before, ConditionType.Degraded);
  const degAfter = find(after, ConditionType.Degraded);
  if (degAfter?.status === "True" && (degBefore?.status !== "True" || degBefore.reason !== degAfter.reason)) {
    await recorder.record(obj, "Warning", degAfter.reason, degAfter.message);
  }
}
