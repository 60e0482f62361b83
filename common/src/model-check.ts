/**
 * @module The contract between the engine pod's model check (an init
 * container that reads the model's and adapters' GGUF headers before the
 * engine starts) and the operator, which reports a failed check in the
 * EnginePool's status: the check's termination message is `Reason: message`,
 * with the reason one of {@link ModelCheckReason}.
 */

/** Why a model check failed. */
export const ModelCheckReason = {
  /** The model file is not where the EnginePool says. */
  ModelNotFound: "ModelNotFound",
  /** The model file is not a readable GGUF file. */
  ModelInvalid: "ModelInvalid",
  /** An adapter file is not where the EnginePool says. */
  AdapterNotFound: "AdapterNotFound",
  /** An adapter file is not a GGUF LoRA adapter. */
  AdapterInvalid: "AdapterInvalid",
  /** An adapter is for another architecture or model size. */
  AdapterIncompatible: "AdapterIncompatible",
} as const;
export type ModelCheckReason = (typeof ModelCheckReason)[keyof typeof ModelCheckReason];

const REASONS = new Set<string>(Object.values(ModelCheckReason));

/** `Reason: message` as the check writes it. */
export function formatModelCheckFailure(reason: ModelCheckReason, message: string): string {
  return `${reason}: ${message}`;
}

/** The reason and message of a check's termination message, or undefined when it is not one. */
export function parseModelCheckFailure(text: string): { reason: ModelCheckReason; message: string } | undefined {
  const m = /^(\w+): ([\s\S]*)$/.exec(text.trim());
  if (m === null || !REASONS.has(m[1]!)) return undefined;
  return { reason: m[1] as ModelCheckReason, message: m[2]!.trim() };
}
