/**
 * @module The schema of an {@link AppConfig} as the router reads it from
 * `interlace-apps`: every field the router dereferences, down to each tool,
 * few-shot message and semantic-function output. The operator writes these
 * from validated AgentApps, but anyone who can write the bucket can write
 * anything, and a config that passed a shallow check (a `null` tool, an
 * output without settings) made the app's routes answer 500 (found by the
 * NATS consumer fuzzer). Unknown fields stay allowed: a newer operator may
 * add some.
 */
import type { JsonSchema } from "../tools.js";
import { CALLING_MODES, CHAT_ROLES, retentionHintSchema, toolSpecSchema } from "../wire/request-schemas.js";

const message: JsonSchema = {
  type: "object",
  properties: { role: { enum: CHAT_ROLES }, content: { type: "string" } },
  required: ["role", "content"],
};

const semanticFunction: JsonSchema = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1 },
    template: { type: "string" },
    outputs: {
      type: "array",
      items: {
        type: "object",
        properties: { name: { type: "string", minLength: 1 }, maxTokens: { type: "integer", minimum: 1 }, temperature: { type: "number", minimum: 0 } },
        required: ["name", "maxTokens", "temperature"],
      },
    },
    tools: { anyOf: [{ type: "boolean" }, { type: "array", items: { type: "string" } }] },
  },
  required: ["name", "template", "outputs", "tools"],
};

export const appConfigSchema: JsonSchema = {
  type: "object",
  properties: {
    namespace: { type: "string", minLength: 1 },
    name: { type: "string", minLength: 1 },
    enginePool: { type: "object", properties: { name: { type: "string", minLength: 1 } }, required: ["name"] },
    systemPrompt: { type: "string" },
    fewShot: { type: "array", items: { type: "object", properties: { messages: { type: "array", items: message } }, required: ["messages"] } },
    callingMode: { enum: CALLING_MODES },
    objective: { enum: ["latency", "throughput"] },
    interrupts: {
      type: "object",
      properties: { userInterrupts: { type: "boolean" }, maxQueued: { type: "integer", minimum: 0 } },
      required: ["userInterrupts", "maxQueued"],
    },
    speculation: {
      type: "object",
      properties: {
        enabled: { type: "boolean" },
        lambda: { type: "number", minimum: 0 },
        maxInFlight: { type: "integer", minimum: 0 },
        engineSide: { type: "boolean" },
        pools: { type: "array", items: { type: "string" } },
      },
      required: ["enabled", "lambda", "maxInFlight", "engineSide"],
    },
    semanticFunctions: { type: "array", items: semanticFunction },
    maxTokens: { type: "integer", minimum: 1 },
    tools: { type: "array", items: toolSpecSchema },
    retention: retentionHintSchema,
    // Fail closed: a router must never serve an app whose key list it cannot read (it would fall back to the global keys).
    auth: {
      type: "object",
      properties: {
        keys: {
          type: "array",
          items: {
            type: "object",
            properties: {
              id: { type: "string", minLength: 1 },
              sha256: { type: "string", pattern: "^[0-9a-f]{64}$" },
              previous: {
                type: "object",
                properties: { sha256: { type: "string", pattern: "^[0-9a-f]{64}$" }, validUntil: { type: "integer", minimum: 0 } },
                required: ["sha256", "validUntil"],
              },
            },
            required: ["id", "sha256"],
          },
        },
      },
      required: ["keys"],
    },
  },
  required: ["namespace", "name", "enginePool", "systemPrompt", "fewShot", "callingMode", "objective", "interrupts", "speculation", "semanticFunctions", "maxTokens", "tools"],
};
