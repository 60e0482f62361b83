/**
 * @module The engine pod's OpenAPI 3.1 document, served at `GET /openapi.json`:
 * the sessions API, the OpenAI-compatible endpoints (chat completions and
 * the Responses API) and the probes. A test
 * checks it against the routes the express app really mounts, both ways.
 */
import { responseFormatSchema } from "../../../common/src/wire/index.js";

const error = { $ref: "#/components/responses/Error" };
const id = { name: "id", in: "path", required: true, schema: { type: "string" } };

/** `cache-tool-output` bodies: one entry or an array of up to 64 (the paper's API shape). */
const cacheToolOutputEntry = {
  type: "object",
  properties: { name: { type: "string" }, params: { type: "object" }, output: {}, keep_alive: { type: "number", description: "seconds" } },
  required: ["name", "output"],
  additionalProperties: false,
} as const;
const cacheToolOutputBody = { anyOf: [cacheToolOutputEntry, { type: "array", items: cacheToolOutputEntry, minItems: 1, maxItems: 64 }] } as const;
/** Both cache-tool-output routes (by session id, or by response id, which is the session id) take the same body. */
const cacheToolOutputPost = {
  summary: "Give a session's tool cache outputs the client already has (speculative tool calls)",
  parameters: [id],
  requestBody: { required: true, content: { "application/json": { schema: cacheToolOutputBody } } },
  responses: { "200": { description: "Cached: {cached: n}" }, "400": error, "404": error, "409": error, "413": error },
};

export const OPENAPI_DOCUMENT = {
  openapi: "3.1.0",
  info: {
    title: "Interlace engine pod",
    version: "0.1.0",
    description:
      "Sessions (async, sync, syncParallel; asyncNaive on --backend openai) with server-sent events, interrupts, and an OpenAI-compatible chat-completions endpoint. Every error body is {\"error\": {\"code\", \"message\", \"type\"}}.",
  },
  paths: {
    "/v1/sessions": {
      post: {
        summary: "Create a session",
        requestBody: { required: true, content: { "application/json": { schema: { $ref: "#/components/schemas/CreateSessionRequest" } } } },
        responses: {
          "201": { description: "Admitted", content: { "application/json": { schema: { type: "object", properties: { id: { type: "string" }, eventsUrl: { type: "string" } }, required: ["id", "eventsUrl"] } } } },
          "400": error,
          "413": error,
          "429": { ...error, description: "All sequences busy (or the upstream is rate limited); see Retry-After" },
          "503": error,
        },
      },
    },
    "/v1/sessions/{id}/events": {
      get: {
        summary: "The session's events as text/event-stream (past events first; Last-Event-ID resumes)",
        parameters: [id],
        responses: { "200": { description: "One SSE frame per SessionEvent; ends after done", content: { "text/event-stream": { schema: { type: "string" } } } }, "404": error },
      },
    },
    "/v1/sessions/{id}/interrupts": {
      post: {
        summary: "Queue a user or agent interrupt",
        parameters: [id],
        requestBody: {
          required: true,
          content: { "application/json": { schema: { type: "object", properties: { value: { type: "string" }, kind: { enum: ["user", "agent"] }, id: { type: "string" } }, required: ["value"] } } },
        },
        responses: { "202": { description: "Queued" }, "404": error, "409": error },
      },
    },
    "/v1/sessions/{id}/cache-tool-output": {
      post: cacheToolOutputPost,
    },
    "/cache-tool-output/{id}": {
      post: cacheToolOutputPost,
    },
    "/v1/sessions/{id}": {
      delete: { summary: "Cancel a session", parameters: [id], responses: { "200": { description: "Cancelled or already finished" }, "404": error } },
    },
    "/v1/chat/completions": {
      post: {
        summary: "OpenAI-compatible chat completions (sync semantics; stream or not; interlace_* extension fields). Every OpenAI parameter is applied or refused with a 400 naming it (README: OpenAI parameters)",
        requestBody: { required: true, content: { "application/json": { schema: { type: "object", properties: { messages: { type: "array" }, tools: { type: "array" }, stream: { type: "boolean" } }, required: ["messages"] } } } },
        responses: { "200": { description: "chat.completion, or chat.completion.chunk frames then [DONE]" }, "400": error, "413": error, "429": error, "502": error, "503": error, "504": error },
      },
    },
    "/v1/responses": {
      post: {
        summary:
          "OpenAI Responses API: function tools, stream or not. previous_response_id continues a stored response (its sequence resident while retained: only the new items are prefilled); unknown or expired → 404",
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: {
                  input: { oneOf: [{ type: "string" }, { type: "array", items: { type: "object" } }] },
                  instructions: { type: "string" },
                  tools: { type: "array", items: { type: "object", properties: { type: { const: "function" }, name: { type: "string" }, description: { type: "string" }, parameters: { type: "object" } }, required: ["type", "name"] } },
                  tool_choice: { oneOf: [{ enum: ["auto", "none", "required"] }, { type: "object", properties: { type: { const: "function" }, name: { type: "string" } }, required: ["type", "name"] }] },
                  parallel_tool_calls: { type: "boolean" },
                  max_tool_calls: { type: "integer", minimum: 1 },
                  text: { type: "object", properties: { format: { type: "object", properties: { type: { enum: ["text", "json_object", "json_schema"] } }, required: ["type"] } } },
                  previous_response_id: { type: "string" },
                  max_output_tokens: { type: "integer", minimum: 1 },
                  temperature: { type: "number", minimum: 0, maximum: 2 },
                  top_p: { type: "number", exclusiveMinimum: 0, maximum: 1 },
                  store: { type: "boolean" },
                  stream: { type: "boolean" },
                },
                required: ["input"],
              },
            },
          },
        },
        responses: {
          "200": { description: "A response object, or Responses stream events (response.created … response.completed)" },
          "400": error,
          "404": { ...error, description: "previous_response_id unknown or expired" },
          "413": error,
          "429": error,
          "502": error,
          "503": error,
          "504": error,
        },
      },
    },
    "/v1/responses/{id}": {
      get: { summary: "A stored response (until --response-store-ttl-ms)", parameters: [id], responses: { "200": { description: "The response object" }, "404": error } },
      delete: { summary: "Forgets a stored response", parameters: [id], responses: { "200": { description: "{id, object: response, deleted: true}" }, "404": error } },
    },
    "/v1/responses/{id}/input_items": {
      get: {
        summary: "The input items of a stored response, paged (order asc|desc, default desc; limit 1..100, default 20; after an item id)",
        parameters: [id, { name: "order", in: "query", schema: { enum: ["asc", "desc"] } }, { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100 } }, { name: "after", in: "query", schema: { type: "string" } }],
        responses: { "200": { description: "{object: list, data, first_id, last_id, has_more}" }, "400": error, "404": error },
      },
    },
    "/v1/responses/{id}/cancel": {
      post: { summary: "Cancels a response being generated; its request ends with status cancelled", parameters: [id], responses: { "200": { description: "The cancelled response object" }, "400": error, "404": error } },
    },
    "/openapi.json": { get: { summary: "This document", responses: { "200": { description: "OpenAPI 3.1" } } } },
    "/healthz": { get: { summary: "Liveness", responses: { "200": { description: "Alive" } } } },
    "/readyz": { get: { summary: "Readiness (503 while loading or shutting down)", responses: { "200": { description: "Ready" }, "503": { description: "Not ready" } } } },
    "/metrics": { get: { summary: "Prometheus metrics", responses: { "200": { description: "Text exposition format" } } } },
  },
  components: {
    responses: {
      Error: {
        description: "An error with a stable code",
        content: {
          "application/json": {
            schema: { type: "object", properties: { error: { type: "object", properties: { code: { type: "string" }, message: { type: "string" }, type: { type: "string" } }, required: ["code", "message", "type"] } }, required: ["error"] },
          },
        },
      },
    },
    schemas: {
      CreateSessionRequest: {
        type: "object",
        description: "common/src/session.ts",
        properties: {
          prompt: { oneOf: [{ type: "string" }, { type: "array", items: { type: "object", properties: { role: { enum: ["system", "user", "assistant", "tool"] }, content: { type: "string" } } } }] },
          system: { type: "string" },
          tools: { type: "array", items: { oneOf: [{ type: "string" }, { type: "object" }] } },
          mode: { enum: ["async", "sync", "syncParallel", "asyncNaive"] },
          prefixReuse: { type: "boolean" },
          maxTokens: { type: "integer", minimum: 1 },
          temperature: { type: "number", minimum: 0 },
          seed: { type: "integer", minimum: 0 },
          grammar: { type: "boolean" },
          kvPolicy: { enum: ["keep", "swap", "recompute", "auto"] },
          retention: {
            description: "KV retention across tool waits: expectedToolMs (the wait estimate for calls whose tool declares no latency) and retentionSeconds (the ttl policy's TTL for this session)",
            type: "object",
            properties: { expectedToolMs: { type: "number", minimum: 0, maximum: 86400000 }, retentionSeconds: { type: "number", minimum: 0, maximum: 86400 } },
            additionalProperties: false,
          },
          policy: { type: "object" },
          toolChoice: { description: "OpenAI tool_choice for the session's first call: required or a named function forces it (--backend openai: sync/syncParallel, the first request's tool_choice)", oneOf: [{ enum: ["auto", "none", "required"] }, { type: "object", properties: { name: { type: "string" } }, required: ["name"] }] },
          responseFormat: {
            description:
              "OpenAI response_format for the session's answer (its text outside call blocks), in every calling mode: generated under a grammar built from the schema while call blocks stay possible; the done event's answer carries it. Not on --backend openai.",
            ...responseFormatSchema,
          },
        },
        required: ["prompt"],
      },
    },
  },
} as const;
