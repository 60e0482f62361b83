/**
 * @module What an EnginePool's pods say about why the pool cannot serve: an
 * engine pod's model check (its `check-model` init containers) that failed,
 * with the reason and message the check wrote as its termination message
 * (`ModelNotFound`, `AdapterIncompatible`, ...). A pure function of the pods,
 * so the EnginePool reports "adapter cml is for llama, the model is gemma3"
 * instead of pods waiting in their init phase with no word on the pool.
 */
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { parseModelCheckFailure, type ModelCheckReason } from "../../../common/src/index.js";
import { CHECK_MODEL_CONTAINER } from "../resources/index.js";

/** The label engine pods carry with their EnginePool's name. */
export const ENGINE_POOL_LABEL = "interlace.dev/enginepool";

export interface ModelCheckFailure {
  reason: ModelCheckReason;
  message: string;
  pod: string;
}

function terminationMessage(status: V1ContainerStatus): string | undefined {
  const t = status.state?.terminated ?? status.lastState?.terminated;
  if (t === undefined || t.exitCode === 0) return undefined;
  return t.message ?? "";
}

/** The first failed model check among `pods` (an EnginePool's engine pods), or undefined. */
export function modelCheckFailure(pods: readonly V1Pod[]): ModelCheckFailure | undefined {
  for (const pod of pods) {
    for (const status of pod.status?.initContainerStatuses ?? []) {
      if (!status.name.startsWith(CHECK_MODEL_CONTAINER)) continue;
      const text = terminationMessage(status);
      if (text === undefined) continue;
      const parsed = parseModelCheckFailure(text);
      const pod_ = pod.metadata?.name ?? "";
      return parsed !== undefined ? { ...parsed, pod: pod_ } : { reason: "ModelInvalid", message: text || `${status.name} failed`, pod: pod_ };
    }
  }
  return undefined;
}
