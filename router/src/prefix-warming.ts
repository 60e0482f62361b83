/**
 * @module Hot-prefix warming, decided as a pure function of plain data (the
 * side effect, an engine's `POST /v1/prefixes`, is prefix-warmer.ts's).
 *
 * Prefix affinity keeps an app on the engine holding its prefix until the
 * load bound spills it; a spilled session then pays a cold prefill of the
 * whole shared prompt on the other engine, in the middle of the burst that
 * spilled it (the README's placement section, "never worse"). Warming moves
 * that prefill ahead of the burst: when an app is hot (at least `sessions`
 * arrivals in the last `windowMs`) and exactly one engine of the pool holds
 * its shared prefix (in cells, or being prefilled there), an engine that is
 * idle enough (nothing prefilling, at least `minFreeShare` of its sequences
 * free, none of this app's warms in flight or cooling down) is asked to put
 * the prefix in its prefix store. A spilled session then forks it there.
 *
 * An engine that joins the pool (a scale-up, a restart) is warmed with each
 * hot app that an engine holds, whatever the number of holders: it is the
 * least loaded engine, so the sessions that spill next go there and fork the
 * warmed prefix. Not while every other engine's sequences are taken: then
 * sessions go to the new engine at once, and an engine prefills a store warm
 * beside them rather than letting them wait for it (sessions follow only
 * another session's fill), so the warm would slow their first tokens; the
 * first session's own prefill, which the next ones follow, warms it instead.
 *
 * Not warmed: a cold app (its sessions fit on one engine, and a warm would
 * take a store entry from another app), one no engine holds yet (its first
 * session seeds it where placement puts it), one held by two engines or more
 * already (unless the engine is joining), and a pool of one engine.
 */

export interface WarmSettings {
  /** Arrivals within `windowMs` that make an app hot (0: warming off). */
  sessions: number;
  windowMs: number;
  /** Share of an engine's sequences that must be free for it to be warmed (0..1). */
  minFreeShare: number;
}

/** One engine of the pool as the decision sees it (plain data). */
export interface WarmEngine {
  pod: string;
  /** Free sequences, less placements not yet in its heartbeat. */
  free: number;
  capacity: number;
  /** Sessions running or queued there, plus placements not yet in its heartbeat. */
  load: number;
  /** Its heartbeat lists prefixes a session is prefilling now. */
  prefilling: boolean;
  /** Leading blocks of the app's shared chain it holds (in cells or being filled). */
  matched: number;
}

export interface WarmInput {
  /** Arrival times of the app's sessions (ms, any order). */
  arrivals: readonly number[];
  now: number;
  /** Blocks in the app's shared prefix (system prompt, tools): its chain's length. */
  segments: number;
  engines: readonly WarmEngine[];
  /** Engines not to ask now: a warm of this app in flight there, or one that just ended. */
  skip: ReadonlySet<string>;
  /** An engine that just became ready: the only one to warm, however many engines hold the prefix. */
  joining?: string;
}

export type WarmDecision =
  | { warm: true; pod: string; holder: string; reason: string }
  | { warm: false; why: "off" | "no-prefix" | "cold" | "single-engine" | "held-by-none" | "held-by-several" | "no-idle-engine" | "joining-under-load" };

export function decideWarm(input: WarmInput, settings: WarmSettings): WarmDecision {
  if (settings.sessions <= 0) return { warm: false, why: "off" };
  if (input.segments <= 0) return { warm: false, why: "no-prefix" };
  const recent = input.arrivals.filter((at) => at > input.now - settings.windowMs && at <= input.now).length;
  if (recent < settings.sessions) return { warm: false, why: "cold" };
  if (input.engines.length < 2) return { warm: false, why: "single-engine" };
  const holders = input.engines.filter((e) => e.matched >= input.segments);
  if (holders.length === 0) return { warm: false, why: "held-by-none" };
  if (holders.length > 1 && input.joining === undefined) return { warm: false, why: "held-by-several" };
  if (input.joining !== undefined && input.engines.every((e) => e.pod === input.joining || e.free <= 0)) return { warm: false, why: "joining-under-load" };
  const idle = input.engines
    .filter((e) => (input.joining === undefined || e.pod === input.joining) && e.matched < input.segments && !e.prefilling && !input.skip.has(e.pod))
    .filter((e) => e.free >= Math.max(1, Math.ceil(settings.minFreeShare * e.capacity)))
    .sort((a, b) => a.load - b.load || b.free - a.free || (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
  const target = idle[0];
  if (target === undefined) return { warm: false, why: "no-idle-engine" };
  const holder = holders[0]!.pod;
  return {
    warm: true,
    pod: target.pod,
    holder,
    reason: `${recent} sessions in ${Math.round(settings.windowMs / 1000)} s, prefix held by ${holders.length > 1 ? `${holders.length} engines` : `${holder} alone`}; ${input.joining !== undefined ? "joining " : ""}${target.pod} has ${target.free} of ${target.capacity} sequences free and nothing prefilling`,
  };
}
