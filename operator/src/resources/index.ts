/**
 * @module Side-effect-free builders of the children each custom resource
 * owns. Reconcilers apply what these return; tests call them directly.
 */
export * from "./common.js";
export * from "./engine-pool.js";
export * from "./tool-pool.js";
export * from "./agent-app.js";
export * from "./app-keys.js";
export * from "./credentials.js";
export * from "./endpoint-picker.js";
export * from "./network-policy.js";
