/**
 * @module The operator's credential authority: the trust root it keeps and
 * the per-component Secrets it mints from it.
 */
export * from "./trust-root.js";
export * from "./authority.js";
