/**
 * @module What the joint autoscaler sees: one sample of live signals per
 * tick (the app's engines' heartbeats and each of its tool pools' JetStream
 * consumer and runner figures), and a window of those samples. Plain data,
 * so recorded traces replay through the decision function unchanged.
 */
import type { EngineHeartbeat } from "../../../common/src/protocol/index.js";

/** The load figures of one engine's fresh heartbeat. */
export type EngineSignal = Pick<
  EngineHeartbeat,
  "ready" | "queuedSessions" | "activeSessions" | "freeSequences" | "totalSequences" | "kvCellsUsed" | "kvCellsTotal" | "tokensPerSecond" | "ttftP90Ms"
>;

/** One tool pool at one instant. */
export interface ToolPoolSignal {
  /** Calls on the pool's consumer no runner has taken yet (JetStream `num_pending`). */
  pending: number;
  /** Calls a runner has taken and not acknowledged: running (JetStream `num_ack_pending`). */
  ackPending: number;
  /** 90th percentile of the wait from publish to a runner starting the call, over the last 10 s, the slowest runner's (absent: no runner started a call lately). */
  waitP90Ms?: number;
  /**
   * Calls delivered to runners since the consumer was created, redeliveries
   * included (JetStream `delivered.consumer_seq`): a counter, whose change
   * between samples with pending's and ackPending's gives the calls' arrival
   * rate and mean time (absent: not read; a lower value than before: the
   * consumer was recreated).
   */
  delivered?: number;
}

/** The signals of one tick. */
export interface SignalSample {
  /** Epoch ms. */
  at: number;
  /** Fresh heartbeats of the app's EnginePool, one per engine pod. */
  engines: EngineSignal[];
  /** By ToolPool name. */
  tools: Record<string, ToolPoolSignal>;
  /**
   * Requests the routers hold for the app's EnginePool because it has no
   * ready engine (their cold-start hold), summed over fresh router presences;
   * absent: 0. A pool at zero has no heartbeat: this is what wakes it.
   */
  heldRequests?: number;
}

/** An EnginePool's engines summed. */
export interface EngineLoad {
  engines: number;
  activeSessions: number;
  queuedSessions: number;
  freeSequences: number;
  totalSequences: number;
  kvCellsUsed: number;
  kvCellsTotal: number;
  tokensPerSecond: number;
  /** The highest recent TTFT p90 any ready engine reports, ms (absent: none reports one). */
  ttftP90Ms?: number;
}

/** Sums the ready engines' heartbeats (an engine not ready serves nothing and is not capacity); takes the highest TTFT p90. */
export function engineLoad(engines: readonly EngineSignal[]): EngineLoad {
  const load: EngineLoad = { engines: 0, activeSessions: 0, queuedSessions: 0, freeSequences: 0, totalSequences: 0, kvCellsUsed: 0, kvCellsTotal: 0, tokensPerSecond: 0 };
  for (const e of engines) {
    if (!e.ready) continue;
    load.engines++;
    load.activeSessions += e.activeSessions;
    load.queuedSessions += e.queuedSessions;
    load.freeSequences += e.freeSequences;
    load.totalSequences += e.totalSequences;
    load.kvCellsUsed += e.kvCellsUsed;
    load.kvCellsTotal += e.kvCellsTotal;
    load.tokensPerSecond += e.tokensPerSecond;
    // The slowest engine's: the pool's p90 is at most that, and it is where first tokens wait.
    if (e.ttftP90Ms !== undefined) load.ttftP90Ms = Math.max(load.ttftP90Ms ?? 0, e.ttftP90Ms);
  }
  return load;
}

/** Calls outstanding on a tool pool: waiting plus running. */
export function outstandingCalls(s: ToolPoolSignal | undefined): number {
  return s === undefined ? 0 : s.pending + s.ackPending;
}
