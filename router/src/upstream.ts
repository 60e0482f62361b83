/**
 * @module Sending a request to the engine placement chose, and on down the
 * order when one refuses: 429 (no free sequence) and 503 (loading, shutting
 * down) and a refused, reset or timed-out connection move on to the next
 * engine at once; any other answer is the request's own and goes back to
 * the client as it is. When every engine refused, the client gets 429 with
 * `Retry-After` — never a hang. Under prefix affinity a request whose
 * prefix's engine is full (within the load bound or past it) waits for it,
 * up to `prefixWaitMs` from its arrival, woken by each heartbeat of the
 * pool: re-prefilling a long prefix on another engine costs more than a
 * short wait, and evicts another app's prefix there. With a cold-start hold (app
 * requests), a pool with no ready engine holds the request until one is
 * ready or the hold times out (cold-start-hold.ts), instead of a 503 at once.
 * With a capacity queue, a request that finds every engine full (or every
 * engine refusing for capacity) waits in arrival order for a free sequence
 * (capacity-queue.ts), instead of a 429 at once.
 */
import { ADMISSION_HEADER, parseAdmission, PREFIX_ROLE_HEADER, prefixRoleOn, type EngineHeartbeat } from "../../common/src/protocol/index.js";
import { ErrorCode, type Logger } from "../../common/src/index.js";
import { withKnownBlocks } from "./prefix-index.js";
import { NO_RESERVATION, type EngineRegistry } from "./engine-registry.js";
import { HttpError, RouterCode } from "./errors.js";
import type { RouterMetrics } from "./metrics.js";
import { onPrefixEngine, place, type PlacementPolicy, type PlacementReason, type PlacementRequest } from "./placement.js";
import type { ColdStartHold } from "./cold-start-hold.js";
import type { CapacityQueue, QueueOutcome, QueueTicket } from "./capacity-queue.js";
import type { AppHomes } from "./app-homes.js";

export interface PlaceContext {
  engines: EngineRegistry;
  metrics: RouterMetrics;
  log: Logger;
  policy: PlacementPolicy;
  loadFactor: number;
  /** Placement's prefix slack (placement.ts). */
  prefixSlack: number;
  retryAfterSeconds: number;
  upstreamTimeoutMs: number;
  /** Headers on every request to an engine (the router's bearer token). */
  engineHeaders: Record<string, string>;
  /** Advanced per placement (round-robin turn, tie rotation). */
  nextTurn(): number;
  /**
   * How long after its arrival a request may wait for the engine holding its
   * prefix when that engine is full (within the load bound or past it), before it
   * spills (absent or 0: never waits).
   */
  prefixWaitMs?: number;
  /** Holds requests while the pool has no ready engine (absent or disabled: 503 at once). */
  coldStart?: ColdStartHold;
  /** Queues requests while every engine of the pool is full (absent or disabled: 429 at once). */
  queue?: CapacityQueue;
  /** Each active app's home engine (prefix affinity with `--app-homes on`; absent: no homes, no prefix roles). */
  appHomes?: AppHomes;
}

export interface PlacedResponse {
  engine: EngineHeartbeat;
  response: Response;
  reason: PlacementReason;
  matched: number;
  /** Engines that refused before this one took it (0: the placement's first choice). */
  retries: number;
  /** Milliseconds the request waited in the capacity queue for a free sequence (0: it never found every engine full). */
  queuedMs: number;
  /** performance.now() when the request went to the engine that answered (the end of the pick). */
  sentAt: number;
  /** Stops counting the placement against its engine: call when the request's work is over (a completion answered). */
  finished(): Promise<void>;
}

type RefusalCause = "capacity" | "unavailable" | "unreachable" | "timeout";

/** Program requests only: what the router knows beyond the heartbeats. */
export interface PlaceHints {
  /** Try this engine first (a task group's or a shared prefix's engine), then placement's order. */
  prefer?: string;
  /** Prefix hashes the router knows an engine holds (program prefixes cut at variables, which heartbeats do not carry). */
  prefixes?: (pod: string) => ReadonlySet<string>;
  /**
   * The POST creates something on the engine (a session) that the caller
   * must end if it no longer wants it: once sent, it runs to its answer even
   * when `signal` aborts (only the upstream timeout cuts it), so the caller
   * learns the id to end. Aborting it mid-flight could leave the engine
   * running a session nobody knows.
   */
  completePost?: boolean;
}

/**
 * Places a request of `pool` with prefix-hash `chain` and POSTs `body` to
 * `path` on each engine in placement order until one accepts (or answers
 * with the request's own error). The accepted response's body is unread.
 */
export async function placeAndPost(
  ctx: PlaceContext,
  pool: { namespace: string; name: string },
  placement: PlacementRequest,
  path: string,
  body: unknown,
  signal?: AbortSignal,
  hints: PlaceHints = {},
): Promise<PlacedResponse> {
  const started = performance.now();
  let holdUntil = started + (ctx.prefixWaitMs ?? 0);
  const known = hints.prefixes;
  const retryAfter = { "Retry-After": String(ctx.retryAfterSeconds) };
  let held = false;
  /** When this request's cold-start hold ends (set when it first finds no ready engine). */
  let coldUntil: number | undefined;
  // Each pass places on the pool as it stands now. A pass ends early only to wait for the engine holding
  // the request's prefix (full, or refusing while full), within prefixWaitMs of the arrival (or of leaving the
  // capacity queue), or to wait in that queue.
  const canHold = (): boolean => performance.now() < holdUntil && signal?.aborted !== true;
  const hold = async (): Promise<void> => {
    held = true;
    await ctx.engines.changed(pool.namespace, pool.name, holdUntil - performance.now(), signal);
  };
  const queue = ctx.queue?.enabled === true ? ctx.queue : undefined;
  /** This request's place in the capacity queue, once it has found every engine full. */
  let ticket: QueueTicket | undefined;
  let queued: QueueOutcome = "failed";
  /** Waits in the queue for the pool's next change; a 429 (the queue full, or the wait run out) counts as a refusal, and `ended` is called on any error. */
  const waitForSequence = async (q: CapacityQueue, ended: () => void): Promise<void> => {
    try {
      ticket ??= q.join(pool);
      await q.wait(pool, ticket, signal);
      // Out of a wait for any sequence, the request may again wait a while for the engine holding its prefix,
      // as a client's retry would: else every queued request spills to whichever engine freed first.
      holdUntil = performance.now() + (ctx.prefixWaitMs ?? 0);
    } catch (err) {
      queued = signal?.aborted === true ? "aborted" : "timeout";
      if (err instanceof HttpError) ctx.metrics.rejected.inc({ code: ErrorCode.Capacity });
      ended();
      throw err;
    }
  };
  const waited = (): number => (ticket === undefined ? 0 : Math.round(performance.now() - ticket.joinedAt));
  /** The app's home engine as of the last placement pass (undefined: no homes kept, or the app not active). */
  let home: string | undefined;
  try {
    const placed = await placeLoop();
    queued = "placed";
    return placed;
  } finally {
    if (ticket !== undefined) queue?.leave(ticket, queued);
  }

  async function placeLoop(): Promise<PlacedResponse> {
    for (;;) {
      // The decision and its first choice's reservation together: no other placement of this front door comes between.
      const { decision, first, waits } = await ctx.engines.exclusive(pool.namespace, pool.name, async () => {
        const loads = ctx.engines
          .loads(pool.namespace, pool.name)
          .map((e) => (known === undefined ? e : { ...e, blocks: withKnownBlocks(e.blocks, known(e.pod)) }));
        home = ctx.appHomes?.homeOf(pool, placement.affinityKey, loads.map((e) => e.pod));
        const decision = place(loads, home !== undefined ? { ...placement, home } : placement, { policy: ctx.policy, loadFactor: ctx.loadFactor, prefixSlack: ctx.prefixSlack, turn: ctx.nextTurn() });
        if (hints.prefer !== undefined && decision.order.includes(hints.prefer)) {
          decision.order = [hints.prefer, ...decision.order.filter((p) => p !== hints.prefer)];
          decision.matched = loads.find((e) => e.pod === hints.prefer)!.blocks.leading(placement.chain).matched;
        }
        // A program's preferred engine (its task group's) outranks the prefix's.
        const holding = decision.holdFor !== undefined && hints.prefer === undefined && canHold();
        // Every engine full, or requests queued before this one still waiting: wait in the queue, in arrival order.
        const waits = queue !== undefined && !holding && decision.order.length > 0 && (loads.every((e) => e.free <= 0) || queue.behind(pool, ticket, decision.order[0]));
        // Set before the reservation's round trip: a request behind this one waits for it to place or wait again.
        if (ticket !== undefined) ticket.set(waits ? "waiting" : holding ? "holding" : "placing", decision.holdFor);
        const first = decision.order[0] === undefined || holding || waits ? undefined : await ctx.engines.reserve(pool.namespace, pool.name, decision.order[0]);
        return { decision, first, waits };
      });
      /** Counted once per request, for the pass that ends it. */
      const count = (onPrefixEngine: boolean): void => {
        ctx.metrics.placements.inc({ policy: ctx.policy, reason: decision.reason });
        if (held) ctx.metrics.prefixHolds.inc({ outcome: onPrefixEngine ? "placed" : "spilled" });
      };
      // Another front door reserved on the pool since this one's view: place again from the refreshed view.
      if (first === null) continue;
      if (waits) {
        await waitForSequence(queue!, () => count(false));
        continue;
      }
      if (decision.order.length > 0 && first === undefined) {
        await hold();
        continue;
      }
      if (decision.order.length === 0) {
        const why = (): string => {
          const seen = ctx.engines.describe(pool.namespace, pool.name);
          if (seen.total === 0) return "no engine of the pool has sent a heartbeat recently";
          return `${seen.total} engine(s) seen, none ready${seen.draining > 0 ? `, ${seen.draining} draining` : ""}`;
        };
        if (ctx.coldStart?.enabled === true) {
          // Scaled to zero or starting: wait for an engine's first heartbeat, then place again.
          coldUntil ??= ctx.coldStart.deadline();
          try {
            await ctx.coldStart.hold(pool, coldUntil, why, signal);
          } catch (err) {
            count(false);
            throw err;
          }
          continue;
        }
        count(false);
        throw new HttpError(503, RouterCode.NoEngine, `EnginePool ${pool.namespace}/${pool.name} has no ready engine: ${why()}`, retryAfter);
      }
      const refusals: string[] = [];
      const causes: RefusalCause[] = [];
      let retried = false;
      for (const [i, pod] of decision.order.entries()) {
        // Cancelled after a refusal: no further engine is tried (a completed POST is the caller's to end).
        if (i > 0 && signal?.aborted === true) throw signal.reason;
        const engine = ctx.engines.find(pool.namespace, pod);
        if (engine === undefined) {
          if (i === 0) first?.release();
          continue;
        }
        const reservation = i === 0 && first !== undefined ? first : ((await ctx.engines.reserve(pool.namespace, pool.name, pod, false)) ?? NO_RESERVATION);
        const timeout = AbortSignal.timeout(ctx.upstreamTimeoutMs);
        let cause: RefusalCause;
        const payload = JSON.stringify(body);
        const sentAt = performance.now();
        try {
          // The engine's prefix store keeps the app's prefix before replicas only on its home.
          const role = home === undefined ? {} : { [PREFIX_ROLE_HEADER]: prefixRoleOn(pod, home) };
          const response = await fetch(`${engine.endpoint}${path}`, {
            method: "POST",
            headers: { ...ctx.engineHeaders, ...role, "content-type": "application/json" },
            body: payload,
            signal: signal !== undefined && hints.completePost !== true ? AbortSignal.any([signal, timeout]) : timeout,
          });
          if (response.status !== 429 && response.status !== 503) {
            if (response.ok) {
              reservation.confirm(parseAdmission(response.headers.get(ADMISSION_HEADER)));
              count(i === 0 && onPrefixEngine(decision.reason));
              const hits = i === 0 ? decision.matched : 0;
              ctx.metrics.prefixSegments.inc({ outcome: "hit" }, hits);
              ctx.metrics.prefixSegments.inc({ outcome: "miss" }, placement.chain.length - hits);
              ctx.metrics.placementSeconds.observe((performance.now() - started) / 1000);
              return { engine, response, reason: decision.reason, matched: hits, retries: i, queuedMs: waited(), sentAt, finished: () => reservation.finish() };
            }
            reservation.release();
            count(false);
            return { engine, response, reason: decision.reason, matched: 0, retries: i, queuedMs: waited(), sentAt, finished: () => Promise.resolve() };
          }
          reservation.release();
          cause = response.status === 429 ? "capacity" : "unavailable";
          await response.body?.cancel().catch(() => undefined);
        } catch (err) {
          reservation.release();
          if (signal?.aborted === true) throw err;
          cause = timeout.aborted ? "timeout" : "unreachable";
          ctx.log.debug({ err, pod }, "engine did not take the request");
        }
        ctx.metrics.engineRetries.inc({ cause });
        refusals.push(`${pod}: ${cause}`);
      causes.push(cause);
        // The prefix's engine filled up after its last heartbeat: hold for it rather than re-prefill elsewhere.
        if (i === 0 && cause === "capacity" && decision.reason === "prefix" && canHold()) {
          if (ticket !== undefined) ticket.set("holding", pod);
          await hold();
          retried = true;
          break;
        }
      }
      if (retried) continue;
      // Every engine refused for capacity (full since their last heartbeats): wait for a sequence in the queue.
      if (queue !== undefined && causes.length > 0 && causes.every((c) => c === "capacity") && signal?.aborted !== true) {
        await waitForSequence(queue, () => count(false));
        continue;
      }
      count(false);
      ctx.metrics.rejected.inc({ code: ErrorCode.Capacity });
      throw new HttpError(429, ErrorCode.Capacity, `no engine of EnginePool ${pool.namespace}/${pool.name} can take the request now (${refusals.join(", ") || "none reachable"}); retry later`, retryAfter);
    }
  }
}
