/**
 * @module Session affinity for chat traffic: a client names its
 * conversation in a header, and placement keeps the conversation on one
 * engine (its cells hold the conversation so far) while that engine is within
 * the load bound, even when its prompt shares no long prefix with anything
 * resident (placement.ts). Both front doors read the same headers:
 *
 * - `x-session-id`: Interlace's own;
 * - `session_id`: what the Codex CLI sends on its Responses API requests.
 *
 * The first present wins. The key is the header's value, so the same
 * conversation lands alike through any router replica or the endpoint picker.
 */
import { badRequest } from "./errors.js";

export const SESSION_HEADERS = ["x-session-id", "session_id"] as const;

/** Longer values are refused rather than hashed: a session id is an id, not a payload. */
export const MAX_SESSION_ID_LENGTH = 256;

/** The request's session key (undefined: no session header), from a header lookup by lower-case name. 400 naming the header when malformed. */
export function sessionKeyOf(header: (name: string) => string | undefined): string | undefined {
  for (const name of SESSION_HEADERS) {
    const value = header(name)?.trim();
    if (value === undefined || value === "") continue;
    if (value.length > MAX_SESSION_ID_LENGTH) throw badRequest(`header "${name}" must be at most ${MAX_SESSION_ID_LENGTH} characters (a conversation's id)`);
    return `session:${value}`;
  }
  return undefined;
}

/** `placement` with the request's session key, when it names one. */
export function withSession<T extends object>(placement: T, header: (name: string) => string | undefined): T & { sessionKey?: string } {
  const sessionKey = sessionKeyOf(header);
  return sessionKey === undefined ? placement : { ...placement, sessionKey };
}
