/**
 * @module The prefix role a router names when it sends a session to an
 * engine (HTTP header {@link PREFIX_ROLE_HEADER}): `home` when the engine is
 * the app's home in the pool (router/src/app-homes.ts), `replica` when the
 * app's home is another engine (the session spilled here). The engine's
 * prefix store keeps home prefixes before replicas
 * (engine-pod/src/scheduler/prefix-store.ts). Absent: home, as before roles.
 */

export const PREFIX_ROLE_HEADER = "x-interlace-prefix-role";

export const PREFIX_ROLES = ["home", "replica"] as const;
export type PrefixRole = (typeof PREFIX_ROLES)[number];

/** The role a header value names; undefined when absent. A value that is not a role is an error of the request. */
export function parsePrefixRole(value: string | undefined): PrefixRole | undefined | Error {
  if (value === undefined || value === "") return undefined;
  return (PREFIX_ROLES as readonly string[]).includes(value) ? (value as PrefixRole) : new Error(`${PREFIX_ROLE_HEADER} must be one of ${PREFIX_ROLES.join(", ")}, got "${value.slice(0, 40)}"`);
}

/** The role of a session sent to `pod` when its app's home is `home` (no pod named: not the home). */
export function prefixRoleOn(pod: string | undefined, home: string): PrefixRole {
  return pod === home ? "home" : "replica";
}
