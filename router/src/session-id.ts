/**
 * @module Routed session ids: `<engine pod>.<engine session id>`. Any router
 * replica derives the owning engine from the id alone and finds its address
 * in the engine heartbeats, so replicas share no session table and a router
 * restart loses nothing.
 */
const ROUTED_ID = /^([a-zA-Z0-9_-]{1,63})\.([A-Za-z0-9_-]{1,128})$/;

export function routedSessionId(pod: string, engineSessionId: string): string {
  return `${pod}.${engineSessionId}`;
}

export function parseRoutedSessionId(id: string): { pod: string; engineSessionId: string } | null {
  const m = ROUTED_ID.exec(id);
  return m === null ? null : { pod: m[1]!, engineSessionId: m[2]! };
}
