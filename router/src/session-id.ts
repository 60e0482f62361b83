/**
 * @module Routed session ids: `<engine pod>.<engine session id>[.<owner tag>]`.
 * Any router replica derives the owning engine from the id alone and finds
 * its address in the engine heartbeats, so replicas share no session table
 * and a router restart loses nothing. The owner tag (session-owner.ts) binds
 * the id to the API key that opened the session.
 */
const ROUTED_ID = /^([a-zA-Z0-9_-]{1,63})\.([A-Za-z0-9_-]{1,128})(?:\.([A-Za-z0-9_-]{1,43}))?$/;

export function routedSessionId(pod: string, engineSessionId: string, ownerTag?: string): string {
  return ownerTag === undefined ? `${pod}.${engineSessionId}` : `${pod}.${engineSessionId}.${ownerTag}`;
}

/** `base` is the id without its tag (what the tag is computed over). */
export function parseRoutedSessionId(id: string): { pod: string; engineSessionId: string; base: string; ownerTag?: string } | null {
  const m = ROUTED_ID.exec(id);
  if (m === null) return null;
  return { pod: m[1]!, engineSessionId: m[2]!, base: `${m[1]!}.${m[2]!}`, ...(m[3] !== undefined ? { ownerTag: m[3] } : {}) };
}

/**
 * Routed response ids (`POST .../responses`): `resp_` and a routed session id
 * over the engine's own response id, so a `previous_response_id` or a GET by
 * id goes to the engine that holds the response (and its retained KV
 * sequence) from the id alone, on any replica, with the same owner tag.
 */
const RESPONSE_PREFIX = "resp_";

export function routedResponseId(pod: string, engineResponseId: string, ownerTag?: string): string {
  return `${RESPONSE_PREFIX}${routedSessionId(pod, engineResponseId, ownerTag)}`;
}

export function parseRoutedResponseId(id: string): ReturnType<typeof parseRoutedSessionId> {
  return id.startsWith(RESPONSE_PREFIX) ? parseRoutedSessionId(id.slice(RESPONSE_PREFIX.length)) : null;
}
