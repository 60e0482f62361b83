/**
 * @module Session placement, a pure function of the pool's engines (as their
 * heartbeats and this router's in-flight placements describe their load, and
 * the router's prefix index — router/src/prefix-index — their blocks) and
 * the request's prefix-hash chain. Three policies, so the benchmark can compare
 * them on the same arrivals:
 *
 * - `prefix-affinity` (Interlace): the engine holding the longest resident
 *   prefix of the request, unless its load is over the bound (among equal
 *   matches, one whose cells hold it before one still prefilling it: a
 *   session there would wait for that fill); then engines
 *   with shorter matches, then the least loaded. When that engine is full,
 *   within the bound or past it, the placement names it in `holdFor`: a
 *   caller that can wait briefly for a free sequence there saves
 *   re-prefilling the prefix elsewhere (a spill costs a whole cold prefill
 *   and evicts another app's prefix). The caller waits at most about one cold
 *   prefill (its `prefixWaitMs`) and then spills, so a hold costs at most
 *   twice what the better of the two choices would have (ski rental), where
 *   spilling at once costs a whole prefill even when a sequence frees a
 *   moment later. On a miss, affinity is seeded by consistent
 *   hashing of the app's shared prefix: the first engine on the ring among
 *   the least loaded under the bound, so a cold prefill never doubles up on
 *   a busy engine while another is idler, and equal engines still converge
 *   per app (consistent hashing with bounded loads, as KubeAI's CHWBL).
 *   An app with a home engine (app-homes.ts: apps spread evenly over the
 *   engines, so the pool's prefix stores hold them all) is seeded on its
 *   home instead, while the home is under the bound.
 *   A request that names its conversation (a session header,
 *   session-affinity.ts) goes first to the first engine under the bound on
 *   the ring from its session key, whatever prefixes other engines hold:
 *   the conversation's own cells are there, and a chat without a long shared
 *   prefix would otherwise wander. Over the bound there, the walk goes on
 *   round the ring, so a spilled conversation spills alike every time.
 * - `least-loaded`: fewest busy + queued sessions.
 * - `round-robin`: in turn.
 *
 * The load bound (CHWBL, Mirrokni et al.): with n engines and L sessions
 * running or queued across them, an engine may take one more while
 * `load + 1 <= ceil(c * (L + 1) / n)`, c = the load factor (default 1.25:
 * no engine more than 25% over the pool mean, rounded up). An engine with no
 * free sequence left is also over the bound. So sessions sharing one system
 * prompt (sglang issue 34513) fill the engine that holds it only up to the
 * bound and then spill, seeding the prefix on a second engine, while a
 * session's own longer history still keeps it where it is.
 *
 * The prefix slack: at a low load the bound is tighter than c says, because
 * it rounds to whole sessions (two engines, two sessions on one: the third
 * spills to the idle one). A spill there costs a whole cold prefill of the
 * prompt the holder would have forked, to save sharing a few decode steps on
 * an engine with free sequences. So the engines holding the request's
 * longest prefix, when every one of them is over the bound, may still take
 * it while `load + 1 <= ceil((L + 1) / n) + slack`, provided its cells hold
 * the prefix already (one still prefilling it would make the session wait
 * about as long as a cold prefill on the idler engine): an absolute imbalance
 * tolerated before balancing, like SGLang's cache-aware router's
 * `balance_abs_threshold`. Past a few sessions per engine c's share is the
 * larger allowance and the slack changes nothing (`prefix-slack`).
 *
 * The result is an order of engines to try: the chosen one first, then the
 * rest by load, so a refusal (429, connection refused) moves on at once.
 */
import { ringFor } from "./consistent-hash.js";
import type { EngineBlocks } from "./prefix-index.js";

export const PLACEMENT_POLICIES = ["prefix-affinity", "least-loaded", "round-robin"] as const;
export type PlacementPolicy = (typeof PLACEMENT_POLICIES)[number];

/**
 * The prefix slack the router and the endpoint picker default to. With two
 * engines of four sequences it lets the prefix's engine take its last free
 * sequence while the other idles (loads 3 + 0), where 1 sent that session to
 * prefill the whole prompt cold on the idle engine: paired on the same
 * arrivals, 2 reused more and was faster per session than 1 (README,
 * *Placement benchmark*). On larger engines c's share is the larger
 * allowance well before the slack matters.
 */
export const DEFAULT_PREFIX_SLACK = 2;

/** Why an engine was chosen (the `reason` label of the placement counter). */
export type PlacementReason =
  /** holds the longest resident prefix and is under the bound */
  | "prefix"
  /** every engine holding the longest prefix was over the bound; one of them took it within the prefix slack */
  | "prefix-slack"
  /** the longest-prefix engines were over the bound; placed on a shorter match or the least loaded */
  | "prefix-spill"
  /** no resident prefix: the app's home engine, else first of the least-loaded engines on the ring from the app's key */
  | "hash"
  /** the request's session (conversation) key: the first engine under the bound on the ring from it */
  | "session"
  /** no resident prefix and every engine over the bound */
  | "least-loaded"
  /** the round-robin policy */
  | "round-robin"
  /** no engine in the pool */
  | "no-engine";

/** Whether a placement went to an engine holding the request's longest prefix (a hold that ends so was worth it). */
export function onPrefixEngine(reason: PlacementReason): boolean {
  return reason === "prefix" || reason === "prefix-slack";
}

/** One engine as placement sees it (plain data). */
export interface EngineLoad {
  pod: string;
  /** Sessions running or queued there, plus this router's placements its heartbeat does not show yet. */
  load: number;
  /** Sequences (concurrent sessions) it runs. */
  capacity: number;
  /** Free sequences, less this router's unconfirmed placements. */
  free: number;
  /** The blocks it holds, as the router's prefix index (heartbeats or KV events) knows them. */
  blocks: EngineBlocks;
}

export interface PlacementRequest {
  /** The request's prefix-hash chain. */
  chain: readonly string[];
  /** What a prefix miss hashes on: the app's shared prefix (system prompt, tools, few-shot). */
  affinityKey: string;
  /** The conversation the request belongs to (a session header), which keeps it on one engine within the bound. */
  sessionKey?: string;
  /** The app's home engine (app-homes.ts): a prefix miss goes there first, while it is under the bound. */
  home?: string;
}

export interface PlacementOptions {
  policy: PlacementPolicy;
  /** CHWBL's c (>= 1). */
  loadFactor: number;
  /** A counter the caller advances per placement (round-robin and tie rotation). */
  turn: number;
  /**
   * Sessions past the pool's even share an engine holding the request's
   * longest prefix may take when every such engine is over the bound
   * (absent: 0, the bound alone).
   */
  prefixSlack?: number;
}

export interface Placement {
  /** Pods in the order to try. */
  order: string[];
  reason: PlacementReason;
  /** Chain entries resident on the chosen engine. */
  matched: number;
  /**
   * The engine holding the longest resident prefix when it is full but within
   * the bound (so `order` spills past it): worth waiting for, briefly.
   */
  holdFor?: string;
}

/** The CHWBL bound: the most sessions any engine may hold after this placement. */
export function loadBound(engines: readonly EngineLoad[], loadFactor: number): number {
  const total = engines.reduce((n, e) => n + e.load, 0);
  return Math.ceil((loadFactor * (total + 1)) / Math.max(1, engines.length));
}

/** The most sessions an engine holding the request's longest prefix may hold after this placement: the bound, or the even share plus the slack. */
export function prefixBound(engines: readonly EngineLoad[], loadFactor: number, slack: number): number {
  return Math.max(loadBound(engines, loadFactor), loadBound(engines, 1) + slack);
}

function rotate<T>(items: readonly T[], turn: number): T[] {
  if (items.length === 0) return [];
  const k = ((turn % items.length) + items.length) % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

export function place(engines: readonly EngineLoad[], request: PlacementRequest, options: PlacementOptions): Placement {
  if (engines.length === 0) return { order: [], reason: "no-engine", matched: 0 };
  const byName = [...engines].sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
  const leading = new Map(byName.map((e) => [e.pod, e.blocks.leading(request.chain)]));
  const matched = new Map(byName.map((e) => [e.pod, leading.get(e.pod)!.matched]));
  // Of the match, what is in cells already (not still being prefilled there).
  const filled = new Map(byName.map((e) => [e.pod, leading.get(e.pod)!.filled]));
  // Rest of the order: engines with room first, then by load; ties rotate so equal engines share work.
  const byLoad = (list: readonly EngineLoad[]): EngineLoad[] =>
    rotate(list, options.turn).sort((a, b) => Number(a.free <= 0) - Number(b.free <= 0) || a.load - b.load);
  const finish = (first: EngineLoad, reason: PlacementReason): Placement => ({
    order: [first.pod, ...byLoad(byName.filter((e) => e !== first)).map((e) => e.pod)],
    reason,
    matched: matched.get(first.pod) ?? 0,
  });

  if (options.policy === "round-robin") return finish(rotate(byName, options.turn)[0]!, "round-robin");
  if (options.policy === "least-loaded") return finish(byLoad(byName)[0]!, "least-loaded");

  const bound = loadBound(byName, options.loadFactor);
  const underBound = (e: EngineLoad): boolean => e.free > 0 && e.load + 1 <= bound;
  if (request.sessionKey !== undefined) {
    const own = ringFor(byName.map((e) => e.pod))
      .walk(request.sessionKey)
      .map((pod) => byName.find((e) => e.pod === pod)!)
      .find(underBound);
    if (own !== undefined) return finish(own, "session");
  }
  const best = Math.max(...matched.values());
  if (best > 0) {
    // Longest match first; among equal matches, one already in cells before one still being filled; then by load.
    const ranked = byLoad(byName).sort((a, b) => matched.get(b.pod)! - matched.get(a.pod)! || filled.get(b.pod)! - filled.get(a.pod)!);
    const top = ranked.find((e) => matched.get(e.pod) === best && underBound(e));
    if (top !== undefined) return finish(top, "prefix");
    const slackBound = prefixBound(byName, options.loadFactor, options.prefixSlack ?? 0);
    // Only where the prefix is in cells already: a session sent where it is still being filled waits for that fill, about as long as a cold prefill on the idler engine.
    const slack = ranked.find((e) => matched.get(e.pod) === best && filled.get(e.pod) === best && e.free > 0 && e.load + 1 <= slackBound);
    if (slack !== undefined) return finish(slack, "prefix-slack");
    const spill = finish(ranked.find(underBound) ?? byLoad(byName)[0]!, "prefix-spill");
    // Past the bound too: the hold is bounded by about one cold prefill, and the spill after it still seeds a second engine.
    const full = ranked.find((e) => matched.get(e.pod) === best && e.free <= 0);
    return full === undefined ? spill : { ...spill, holdFor: full.pod };
  }
  const open = byName.filter(underBound);
  const home = open.find((e) => e.pod === request.home);
  if (home !== undefined) return finish(home, "hash");
  const least = Math.min(...open.map((e) => e.load));
  const ring = ringFor(byName.map((e) => e.pod)).walk(request.affinityKey);
  const seeded = ring.map((pod) => open.find((e) => e.pod === pod)).find((e) => e !== undefined && e.load === least);
  if (seeded !== undefined) return finish(seeded, "hash");
  return finish(byLoad(byName)[0]!, "least-loaded");
}
