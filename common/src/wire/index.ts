/**
 * @module The wire schema: the one validator (HTTP bodies, NATS messages,
 * spec files, call arguments), tool-schema normalisation, the shared request
 * schemas and checks (sessions, interrupts, chat completions, Responses,
 * cache-tool-output), and the error line the model reads. Free of the NATS
 * client, so the HTTP layer and in-process engines load it alone.
 */
export * from "./validator.js";
export * from "./tool-schema.js";
export * from "./error-line.js";
export * from "./request-schemas.js";
export * from "./openai-shared-schema.js";
export * from "./response-format-schema.js";
export * from "./chat-completions-schema.js";
export * from "./responses-schema.js";
export * from "./cache-tool-output-schema.js";
export * from "./schema-refs.js";
