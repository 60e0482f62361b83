/**
 * @module The public surface of the Interlace API (group interlace.dev,
 * v1alpha1): the three kinds' types and schemas, condition constants, and the
 * CRD builder. The operator runtime, reconcilers, the generator and tests
 * import from here only.
 */
import { AgentAppKind } from "./agentapp.js";
import { EnginePoolKind } from "./enginepool.js";
import type { KindDefinition } from "./kind.js";
import { ToolPoolKind } from "./toolpool.js";

export * from "./kind.js";
export * from "./conditions.js";
export * from "./autoscaling.js";
export * from "./egress.js";
export * from "./schema.js";
export * from "./crd.js";
export * from "./enginepool.js";
export * from "./toolpool.js";
export * from "./agentapp.js";
export * from "./inferencepool.js";

/** Every Interlace kind, in the order their CRDs are generated. */
export const InterlaceKinds = {
  EnginePool: EnginePoolKind,
  ToolPool: ToolPoolKind,
  AgentApp: AgentAppKind,
} as const satisfies Record<string, KindDefinition>;

/** The file name of a kind's generated CRD under `crds/` (`interlace.dev_enginepools.yaml`). */
export function crdFileName(def: KindDefinition): string {
  return `${def.group}_${def.plural}.yaml`;
}
