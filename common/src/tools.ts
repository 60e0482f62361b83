/**
 * @module Tool specifications shared by the engine (prompting, grammar,
 * validation), the tool runner and the operator's ToolPool resource.
 */

/** A JSON Schema object (draft 2020-12 subset: what Ajv and our GBNF builder understand). */
export type JsonSchema = { [key: string]: unknown };

/** One tool as the model sees it and as runners execute it. */
export interface ToolSpec {
  /** Unique within an app; `^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$`. */
  name: string;
  description: string;
  /** JSON Schema of the arguments object (`type: "object"`). */
  parameters: JsonSchema;
  /** Expected run time; shown to the model as the LPT hint and used by the trap handler. */
  estimatedLatencyMs?: number;
  /** Stateless and cheap: safe to start speculatively. */
  speculative?: boolean;
  /** Safe to retry. */
  idempotent?: boolean;
  /** Which pool runs it (NATS subject part); absent means the engine's in-process executor. */
  pool?: { namespace: string; name: string };
}

export const TOOL_NAME_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$/;
