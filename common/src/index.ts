/**
 * @module The shared module: wire types, CML codec, errors, config, logging and
 * probes. Imported by engine-pod and operator; imports nothing of theirs.
 */
export * from "./cml.js";
export * from "./tools.js";
export * from "./session.js";
export * from "./errors.js";
export * from "./logger.js";
export * from "./probes.js";
export * from "./shutdown.js";
export * from "./config.js";
export * from "./session-client.js";
export * from "./run-under-deadline.js";
export * from "./prefix-hash.js";
export * from "./tool-call-key.js";
export * from "./model-check.js";
export * from "./speculation-limits.js";
