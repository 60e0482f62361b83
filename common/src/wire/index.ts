/**
 * @module The wire schema: the one validator (HTTP bodies, NATS messages,
 * spec files, call arguments), tool-schema normalisation, the shared request
 * schemas and checks, and the error line the model reads. Free of the NATS
 * client, so the HTTP layer and in-process engines load it alone.
 */
export * from "./validator.js";
export * from "./tool-schema.js";
export * from "./error-line.js";
export * from "./request-schemas.js";
export * from "./schema-refs.js";
