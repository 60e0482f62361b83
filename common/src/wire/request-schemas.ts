/**
 * @module JSON Schemas of the HTTP request bodies (`POST /v1/sessions`,
 * `POST /v1/sessions/{id}/interrupts`) and of their parts (messages, tool
 * specs, scripted policies, sampling), checked by the one validator; plus the
 * checks a schema cannot say (a policy's calls name the session's tools and
 * known dependencies). The HTTP server validates bodies with these and the
 * engine validates what any caller hands it with the same pieces.
 */
import { ErrorCode } from "../errors.js";
import type { CreateSessionRequest, PostInterruptRequest, RetentionHint, ScriptedPolicySpec } from "../session.js";
import { TOOL_NAME_PATTERN, type JsonSchema } from "../tools.js";
import { TOOL_CHOICE_MODES } from "./openai-shared-schema.js";
// The session's `responseFormat` takes OpenAI's `response_format` shape; the engine compiles its schema into a grammar.
import { responseFormatSchema } from "./response-format-schema.js";
import { compileSchema } from "./validator.js";

/** Call and interrupt ids appear in `[INTR] id [HEAD]`: identifiers. */
export const CALL_ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Interrupt ids a client may choose (bounded). */
export const INTERRUPT_ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** A call id as the engine writes it into `[CALL] id [HEAD]` and reads it back from tool results (OpenAI bodies). */
export const callIdSchema: JsonSchema = { type: "string", pattern: CALL_ID_PATTERN.source, "x-expected": "an identifier ([A-Za-z_][A-Za-z0-9_]*)" };

/** `asyncNaive` is served as a session mode by `--backend openai` only (the own engine refuses it). */
export const CALLING_MODES = ["async", "sync", "syncParallel", "asyncNaive"] as const;
export const KV_POLICIES = ["auto", "keep", "swap", "recompute"] as const;
export const CHAT_ROLES = ["system", "user", "assistant", "tool"] as const;
/** Who sent an interrupt. */
export const INTERRUPT_KINDS = ["user", "agent"] as const;

const chatMessageSchema: JsonSchema = {
  type: "object",
  properties: { role: { enum: CHAT_ROLES }, content: { type: "string" } },
  required: ["role", "content"],
  additionalProperties: false,
};

/** A full tool spec (the HTTP server also accepts a builtin's bare name). */
export const toolSpecSchema: JsonSchema = {
  type: "object",
  properties: {
    name: { type: "string", pattern: TOOL_NAME_PATTERN.source },
    description: { type: "string" },
    parameters: { type: "object" },
    estimatedLatencyMs: { type: "number", minimum: 0 },
    speculative: { type: "boolean" },
    idempotent: { type: "boolean" },
    pool: {
      type: "object",
      properties: { namespace: { type: "string" }, name: { type: "string" } },
      required: ["namespace", "name"],
      additionalProperties: false,
    },
  },
  required: ["name"],
};

const scriptedCallSchema: JsonSchema = {
  type: "object",
  properties: {
    id: { type: "string", pattern: CALL_ID_PATTERN.source },
    tool: { type: "string" },
    arguments: { type: "object" },
    dependsOn: { type: "array", items: { type: "string" } },
    estimatedLatencyMs: { type: "number", minimum: 0, maximum: 3_600_000 },
    afterInterrupt: { type: "string" },
  },
  required: ["id", "tool", "arguments"],
  additionalProperties: false,
};

export const scriptedPolicySchema: JsonSchema = {
  type: "object",
  properties: { type: { enum: ["lpt-dag", "text"] } },
  required: ["type"],
  allOf: [
    {
      if: { properties: { type: { const: "text" } } },
      then: {
        properties: { type: true, pieces: { type: "array", items: { type: "string" } } },
        required: ["pieces"],
        additionalProperties: false,
      },
    },
    {
      if: { properties: { type: { const: "lpt-dag" } } },
      then: {
        properties: {
          type: true,
          calls: { type: "array", items: scriptedCallSchema },
          callStyle: { enum: ["json", "python"] },
          thinkTokens: { type: "integer", minimum: 0, maximum: 100_000 },
          leadTokens: { type: "integer", minimum: 0, maximum: 100_000 },
          finalText: { type: "string" },
        },
        required: ["calls"],
        additionalProperties: false,
      },
    },
  ],
};

const samplingProperties = {
  temperature: { type: "number", minimum: 0, maximum: 2 },
  seed: { type: "integer", minimum: 0, maximum: 0xffffffff },
} as const;

/** A session's KV retention hint (common/src/session.ts `RetentionHint`): at most a day either way. */
export const retentionHintSchema: JsonSchema = {
  type: "object",
  description: "KV retention across tool waits: expectedToolMs (the wait estimate for calls whose tool declares no latency) and retentionSeconds (the ttl policy's TTL for this session)",
  properties: {
    expectedToolMs: { type: "number", minimum: 0, maximum: 86_400_000 },
    retentionSeconds: { type: "number", minimum: 0, maximum: 86_400 },
  },
  additionalProperties: false,
};


/** `POST /v1/sessions`; `tools` entries are resolved (builtin names, full specs) after this check. */
export const createSessionBodySchema: JsonSchema = {
  type: "object",
  description: "common/src/session.ts CreateSessionRequest",
  properties: {
    prompt: { anyOf: [{ type: "string", minLength: 1 }, { type: "array", minItems: 1, items: chatMessageSchema }] },
    system: { type: "string" },
    tools: { type: "array", items: { anyOf: [{ type: "string" }, { type: "object" }] } },
    mode: { enum: CALLING_MODES },
    prefixReuse: { type: "boolean" },
    maxTokens: { type: "integer", minimum: 1, maximum: 1_000_000 },
    ...samplingProperties,
    grammar: { type: "boolean" },
    kvPolicy: { enum: KV_POLICIES },
    retention: retentionHintSchema,
    policy: scriptedPolicySchema,
    /** Admission priority, higher first (the router maps the AgentApp's objective onto it). */
    priority: { type: "integer", minimum: -1000, maximum: 1000 },
    /** A latency-critical request's batch cap (the router sends it for a program request deduced `latency`). */
    maxBatch: { type: "integer", minimum: 1, maximum: 4096 },
    // Checked field by field by the engine (a scripted draft needs a scripted policy).
    speculation: { type: "object" },
    toolChoice: {
      description: "OpenAI tool_choice for the session's first call: required or a named function forces it (--backend openai: sync/syncParallel, the first request's tool_choice)",
      anyOf: [
        { enum: TOOL_CHOICE_MODES },
        { type: "object", properties: { name: { type: "string", minLength: 1 } }, required: ["name"], additionalProperties: false },
      ],
    },
    responseFormat: responseFormatSchema,
  },
  required: ["prompt"],
  additionalProperties: false,
};

/** `POST /v1/sessions/{id}/interrupts`. */
export const interruptBodySchema: JsonSchema = {
  type: "object",
  properties: {
    value: { type: "string", minLength: 1 },
    kind: { enum: INTERRUPT_KINDS },
    id: { type: "string", pattern: INTERRUPT_ID_PATTERN.source },
    /** Refuse (429) when this many interrupts are already queued for the session (the AgentApp's `interrupts.maxQueued`). */
    maxQueued: { type: "integer", minimum: 1, maximum: 1_000_000 },
  },
  required: ["value"],
  additionalProperties: false,
};

/** The retention hint alone: the engine checks one from an in-process caller with the HTTP layer's rule. */
export const validateRetentionHint = compileSchema<RetentionHint>(retentionHintSchema, "retention");

export const validateCreateSessionBody = compileSchema<Omit<CreateSessionRequest, "tools"> & { tools?: unknown[] }>(createSessionBodySchema, "body", "request");
export const validateInterruptBody = compileSchema<PostInterruptRequest>(interruptBodySchema, "body", "request");
export const validateToolSpecShape = compileSchema<Record<string, unknown>>(toolSpecSchema, "tool");
export const validateScriptedPolicy = compileSchema<ScriptedPolicySpec>(scriptedPolicySchema, "policy");
export const validateSampling = compileSchema<{ temperature?: number; seed?: number }>(
  { type: "object", properties: samplingProperties },
  "sampling",
);

/**
 * What a schema cannot check in a scripted policy: its calls use the
 * session's tools (`unknown_tool`), ids are unique and dependencies known.
 * Null when the policy is fine.
 */
export function policyProblem(
  policy: ScriptedPolicySpec,
  toolNames: ReadonlySet<string>,
  field = "policy",
): { code: typeof ErrorCode.UnknownTool | typeof ErrorCode.BadRequest; message: string } | null {
  if (policy.type === "text") return null;
  const ids = new Set<string>();
  for (const [i, c] of policy.calls.entries()) {
    const where = `${field}.calls[${i}]`;
    if (!toolNames.has(c.tool)) {
      return { code: ErrorCode.UnknownTool, message: `${where}.tool "${c.tool}" is not among the session's tools (${[...toolNames].join(", ") || "none"})` };
    }
    if (ids.has(c.id)) return { code: ErrorCode.BadRequest, message: `${where}.id "${c.id}" is used twice` };
    ids.add(c.id);
  }
  for (const c of policy.calls) {
    for (const dep of c.dependsOn) if (!ids.has(dep)) return { code: ErrorCode.BadRequest, message: `${field}: call "${c.id}" depends on unknown call "${dep}"` };
  }
  return null;
}
