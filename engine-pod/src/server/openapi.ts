/**
 * @module The engine pod's OpenAPI 3.1 document, served at `GET /openapi.json`
 * and written to `docs/openapi.json` by `npm run openapi`: the sessions API,
 * the OpenAI-compatible endpoints (chat completions and the Responses API)
 * and the probes. The request bodies' schemas are the wire schemas the
 * server validates with (`common/src/wire/`), imported, not restated. A test
 * checks the document against the routes the express app really mounts,
 * both ways, and the committed copy against this source.
 */
import {
  cacheToolOutputBodySchema,
  chatCompletionBodySchema,
  createSessionBodySchema,
  interruptBodySchema,
  responsesBodySchema,
} from "../../../common/src/wire/index.js";
import { ADMISSION_HEADER } from "../../../common/src/protocol/engine-heartbeat.js";
import { PREFIX_ROLE_HEADER, PREFIX_ROLES } from "../../../common/src/protocol/prefix-role.js";

const error = { $ref: "#/components/responses/Error" };
const id = { name: "id", in: "path", required: true, schema: { type: "string" } };
/** A JSON request body whose schema is one of `components.schemas`. */
const body = (name: string): { required: true; content: { "application/json": { schema: { $ref: string } } } } => ({
  required: true,
  content: { "application/json": { schema: { $ref: `#/components/schemas/${name}` } } },
});

const cacheToolOutputBody = body("CacheToolOutputRequest");
/** Both cache-tool-output routes (by session id, or by response id, which is the session id) take the same body. */
const cacheToolOutputPost = {
  summary: "Give a session's tool cache outputs the client already has (speculative tool calls)",
  parameters: [id],
  requestBody: cacheToolOutputBody,
  responses: { "200": { description: "Cached: {cached: n}" }, "400": error, "404": error, "409": error, "413": error },
};

/** On an answer that admitted a session or completion: the engine's admission count then (heartbeats carry the counter; routers release a placement reservation on the heartbeat that reaches it). */
const admitted = {
  [ADMISSION_HEADER]: { description: "The engine's admission counter once it admitted this request (its heartbeat's `admissions`)", schema: { type: "integer", minimum: 1 } },
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
        parameters: [
          {
            name: PREFIX_ROLE_HEADER,
            in: "header",
            description: "From the placing router: whether this engine is the app's home in the pool (a replica's shared prefix never replaces a home prefix in the prefix store). Absent: home",
            schema: { enum: [...PREFIX_ROLES] },
          },
        ],
        requestBody: body("CreateSessionRequest"),
        responses: {
          "201": { description: "Admitted", headers: admitted, content: { "application/json": { schema: { type: "object", properties: { id: { type: "string" }, eventsUrl: { type: "string" } }, required: ["id", "eventsUrl"] } } } },
          "400": error,
          "413": error,
          "429": { ...error, description: "All sequences busy (or the upstream is rate limited); see Retry-After" },
          "503": error,
        },
      },
    },
    "/v1/prefixes": {
      post: {
        summary:
          "Warm an app's shared prefix (system prompt, tool block) into the prefix store without admitting a session (routers call it on an idle engine; the body is a session's, rendered by the same code)",
        requestBody: body("CreateSessionRequest"),
        responses: {
          "201": { description: "Warmed: {outcome, tokens, hashes, prefilledTokens}" },
          "200": { description: "Already held (a no-op)" },
          "400": error,
          "409": { ...error, description: "no_prefix_store (this engine keeps none), no_shared_prefix (nothing to store) or prefix_store_full (every entry holds an app homed on this engine)" },
          "413": error,
          "429": { ...error, description: "Busy: a session prefilling, no free sequence, or another warm running; see Retry-After" },
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
        requestBody: body("PostInterruptRequest"),
        responses: { "202": { description: "Queued" }, "400": error, "404": error, "409": error, "413": error, "429": error },
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
        requestBody: body("ChatCompletionRequest"),
        responses: { "200": { description: "chat.completion, or chat.completion.chunk frames then [DONE]", headers: admitted }, "400": error, "413": error, "429": error, "502": error, "503": error, "504": error },
      },
    },
    "/v1/responses": {
      post: {
        summary:
          "OpenAI Responses API: function tools, stream or not. previous_response_id continues a stored response (its sequence resident while retained: only the new items are prefilled); unknown or expired → 404",
        requestBody: body("ResponsesRequest"),
        responses: {
          "200": { description: "A response object, or Responses stream events (response.created … response.completed)", headers: admitted },
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
            schema: { type: "object", properties: { error: { type: "object", properties: { code: { type: "string" }, message: { type: "string" }, type: { type: "string" }, param: { type: ["string", "null"] } }, required: ["code", "message", "type", "param"] } }, required: ["error"] },
          },
        },
      },
    },
    schemas: {
      CreateSessionRequest: createSessionBodySchema,
      PostInterruptRequest: interruptBodySchema,
      ChatCompletionRequest: chatCompletionBodySchema,
      ResponsesRequest: responsesBodySchema,
      CacheToolOutputRequest: cacheToolOutputBodySchema,
    },
  },
} as const;
