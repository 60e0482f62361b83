/**
 * @module The Interlace NATS protocol: subjects and stream names, header
 * names, message schemas (validated at both ends), the codec that builds and
 * reads messages and their headers, the protocol version and the tool
 * runner's spec-file format. Shared by the engine's NATS executor, the tool
 * runner, the router and tests.
 */
export * from "./version.js";
export * from "./headers.js";
export * from "./subjects.js";
export * from "./messages.js";
export * from "./validate.js";
export * from "./codec.js";
export * from "./runner-config.js";
export * from "./streams.js";
export * from "./chunked-kv.js";
export * from "./reopening-kv.js";
export * from "./kv-keys.js";
export * from "./reliability.js";
export * from "./publish.js";
export * from "./engine-heartbeat.js";
export * from "./prefix-role.js";
export * from "./kv-events.js";
export * from "./warm-arrivals.js";
export * from "./queue-heads.js";
export * from "./app-config.js";
export * from "./stream-replicas.js";
