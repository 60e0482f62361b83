/**
 * @module The joint autoscaler's decision logic (pure): signal samples in,
 * a replica count and a reason per pool out.
 */
export * from "./signals.js";
export * from "./policy.js";
export * from "./offered-load.js";
export * from "./runner-demand.js";
export * from "./engine-demand.js";
export * from "./stabilize.js";
export * from "./reason.js";
export * from "./decide.js";
export * from "./pool-wants.js";
export * from "./wake.js";
