/**
 * @module Which engines of the pool a request goes to, as `ip:port`
 * endpoints for the data plane: the router's own placement (placement.ts)
 * over the same engine heartbeats (engine-registry.ts), restricted to the
 * data plane's subset hint when it sends one. The order is the fallback
 * list, best first. As in the router, a request whose prefix's engine is
 * full waits for it (up to `prefixWaitMs`, woken
 * by each heartbeat), and a request no engine has a free sequence for waits
 * as long and is then shed (429 with `Retry-After`). The first engine is
 * counted as taken while the request is in flight, so a burst between two
 * heartbeats spreads as it does through the router.
 */
import { ErrorCode } from "../../../common/src/index.js";
import { NO_RESERVATION, type EngineRegistry, type Reservation } from "../engine-registry.js";
import { HttpError, RouterCode } from "../errors.js";
import { onPrefixEngine, place, type EngineLoad, type PlacementPolicy, type PlacementReason, type PlacementRequest } from "../placement.js";
import type { PickerMetrics } from "./metrics.js";
import type { AppHomes } from "../app-homes.js";

export interface EndpointPickerOptions {
  engines: EngineRegistry;
  pool: { namespace: string; name: string };
  policy: PlacementPolicy;
  loadFactor: number;
  /** Placement's prefix slack (placement.ts; 0: the bound alone). */
  prefixSlack: number;
  prefixWaitMs: number;
  retryAfterSeconds: number;
  /** Endpoints in the fallback list (1: the chosen one only). */
  maxEndpoints: number;
  metrics: PickerMetrics;
  /** Each active app's home engine (prefix affinity with `--app-homes on`; absent: no homes, no prefix roles). */
  appHomes?: AppHomes;
}

/** A request's destination. */
export interface Pick {
  /** Engine pods, best first. */
  pods: string[];
  /** Their `ip:port`, in the same order. */
  endpoints: string[];
  reason: PlacementReason | "pinned";
  /** Prefix-chain entries resident on the first engine. */
  matched: number;
  /** Counts the first engine as taken until `release` (refused), `finish` (a completion answered) or, once `confirm`ed (it took the request), its heartbeat. */
  reservation: Reservation;
  /** The request's app's home engine (absent: no home): the first engine is told whether it is (common/src/protocol/prefix-role.ts). */
  home?: string;
}


/** `http://10.0.0.7:8080` → `10.0.0.7:8080` (the port defaulted from the scheme). */
export function endpointOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port !== "" ? u.port : u.protocol === "https:" ? "443" : "80"}`;
  } catch {
    return undefined;
  }
}

/** Whether `endpoint` is allowed by a subset entry (`ip:port`, or a bare IP: any port). */
function allowedBy(subset: readonly string[], endpoint: string): boolean {
  const host = endpoint.slice(0, endpoint.lastIndexOf(":"));
  return subset.some((s) => s === endpoint || s === host);
}

export class EndpointPicker {
  private turn = 0;

  constructor(private readonly options: EndpointPickerOptions) {}

  /** Ready engines of the pool with their endpoints (those the subset allows, when there is one). */
  private candidates(subset: readonly string[] | null): (EngineLoad & { endpoint: string })[] {
    const { namespace, name } = this.options.pool;
    return this.options.engines.loads(namespace, name).flatMap((e) => {
      const url = this.options.engines.find(namespace, e.pod)?.endpoint;
      const endpoint = url === undefined ? undefined : endpointOf(url);
      if (endpoint === undefined || (subset !== null && !allowedBy(subset, endpoint))) return [];
      return [{ ...e, endpoint }];
    });
  }

  private noEngine(subset: readonly string[] | null): HttpError {
    const { namespace, name } = this.options.pool;
    const seen = this.options.engines.describe(namespace, name);
    const why =
      subset !== null && seen.ready > 0
        ? `none of its ${seen.ready} ready engine(s) is in the data plane's subset (${subset.join(",") || "empty"})`
        : seen.total === 0
          ? "no engine of the pool has sent a heartbeat recently"
          : `${seen.total} engine(s) seen, none ready`;
    return new HttpError(503, RouterCode.NoEngine, `EnginePool ${namespace}/${name} has no ready engine: ${why}`, { "Retry-After": String(this.options.retryAfterSeconds) });
  }

  /** A session of the app with this affinity key arrived: the app is active (it holds a home) from now. */
  appArrived(affinityKey: string): void {
    this.options.appHomes?.observe(this.options.pool, affinityKey);
  }

  /** Places a request with prefix chain `chain`; throws 503 (no engine) or 429 (every engine full past the wait). */
  async place(request: PlacementRequest, subset: readonly string[] | null, signal?: AbortSignal): Promise<Pick> {
    const o = this.options;
    const holdUntil = performance.now() + o.prefixWaitMs;
    let held = false;
    let home: string | undefined;
    for (;;) {
      // The decision and its reservation together (engine-registry.ts): no other pick of this pool comes between.
      const { loads, decision, full, waits, reservation } = await o.engines.exclusive(o.pool.namespace, o.pool.name, async () => {
        const loads = this.candidates(subset);
        home = o.appHomes?.homeOf(o.pool, request.affinityKey, loads.map((e) => e.pod));
        const decision = place(loads, home !== undefined ? { ...request, home } : request, { policy: o.policy, loadFactor: o.loadFactor, prefixSlack: o.prefixSlack, turn: this.turn++ });
        const full = loads.every((e) => e.free <= 0);
        const canHold = performance.now() < holdUntil && signal?.aborted !== true;
        const waits = (decision.holdFor !== undefined || full) && canHold;
        const placing = !full && !waits && decision.order[0] !== undefined;
        return { loads, decision, full, waits, reservation: placing ? await o.engines.reserve(o.pool.namespace, o.pool.name, decision.order[0]!) : NO_RESERVATION };
      });
      // Another front door reserved on the pool since this one's view: pick again from the refreshed view.
      if (reservation === null) continue;
      if (loads.length === 0) {
        o.metrics.picks.inc({ reason: "no-engine" });
        throw this.noEngine(subset);
      }
      if (waits) {
        held = true;
        await o.engines.changed(o.pool.namespace, o.pool.name, holdUntil - performance.now(), signal);
        continue;
      }
      if (held) o.metrics.holds.inc({ outcome: onPrefixEngine(decision.reason) ? "placed" : full ? "shed" : "spilled" });
      if (full) {
        o.metrics.picks.inc({ reason: "shed" });
        throw new HttpError(429, ErrorCode.Capacity, `no engine of EnginePool ${o.pool.namespace}/${o.pool.name} has a free sequence; retry later`, { "Retry-After": String(o.retryAfterSeconds) });
      }
      o.metrics.picks.inc({ reason: decision.reason });
      o.metrics.prefixSegments.inc({ outcome: "hit" }, decision.matched);
      o.metrics.prefixSegments.inc({ outcome: "miss" }, request.chain.length - decision.matched);
      const order = decision.order.slice(0, o.maxEndpoints);
      const byPod = new Map(loads.map((e) => [e.pod, e.endpoint]));
      return {
        pods: order,
        endpoints: order.map((p) => byPod.get(p)!),
        reason: decision.reason,
        matched: decision.matched,
        reservation,
        ...(home !== undefined ? { home } : {}),
      };
    }
  }

  /** The engine a session or response lives on; 410 when it is gone, 503 when the subset excludes it. */
  pinned(pod: string, subset: readonly string[] | null, what: string): Pick {
    const { namespace, name } = this.options.pool;
    const url = this.options.engines.find(namespace, pod)?.endpoint;
    const endpoint = url === undefined ? undefined : endpointOf(url);
    if (endpoint === undefined) {
      throw new HttpError(410, RouterCode.EngineLost, `${what} ran on engine ${pod}, which is gone from EnginePool ${namespace}/${name} (no heartbeat within the TTL)`);
    }
    if (subset !== null && !allowedBy(subset, endpoint)) throw new HttpError(503, RouterCode.NoEngine, `${what} lives on engine ${pod} (${endpoint}), which the data plane's subset excludes`);
    this.options.metrics.picks.inc({ reason: "pinned" });
    return { pods: [pod], endpoints: [endpoint], reason: "pinned", matched: 0, reservation: NO_RESERVATION };
  }

  /** The pod behind an endpoint the data plane reports it served. */
  podAt(endpoint: string): string | undefined {
    return this.candidates(null).find((e) => e.endpoint === endpoint)?.pod;
  }
}
