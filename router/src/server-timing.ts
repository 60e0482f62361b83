/**
 * @module The `Server-Timing` entry both front doors put on a placed
 * request's answer: `pick;dur=<ms>`, from the request's body having arrived
 * to the engine being chosen and the request handed on (placement, plus any
 * wait for a full engine holding the prefix). The router and the endpoint
 * picker measure it alike, so a client (or the placement bench) compares
 * the two doors request by request.
 */

export const PICK_TIMING = "pick";

/** The header value for a pick that took `ms` (microsecond resolution). */
export function pickTiming(ms: number): string {
  return `${PICK_TIMING};dur=${Math.max(0, ms).toFixed(3)};desc="placement"`;
}

/** The pick's duration in ms from a `Server-Timing` header value, if it has one. */
export function parsePickTiming(header: string | null | undefined): number | undefined {
  if (header == null) return undefined;
  for (const entry of header.split(",")) {
    const [name, ...params] = entry.split(";").map((s) => s.trim());
    if (name !== PICK_TIMING) continue;
    const dur = params.find((p) => p.startsWith("dur="));
    const ms = dur === undefined ? NaN : Number(dur.slice(4));
    return Number.isFinite(ms) ? ms : undefined;
  }
  return undefined;
}
