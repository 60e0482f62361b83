/**
 * @module How many engines one sample of an EnginePool asks for: one
 * sequence for every session that holds or wants one, except the sessions
 * whose tool calls wait for a runner. Those wait on the tools, and more
 * engines would not make their calls start sooner: queueing that the tool
 * backlog explains does not grow the engines (the runners grow instead). A
 * session whose call is running still holds its sequence for the call's
 * duration, so it counts: with every sequence held through running calls,
 * new sessions queue (or the routers refuse them) until more sequences come,
 * and only more engines give those. Queued sessions under KV pressure count
 * one engine more. Requests the routers hold for want of a ready engine are
 * work too: a pool that holds them is not idle. An app's
 * TTFT objective exceeded by the engines' recent TTFT p90 asks for one engine
 * more than are ready now: one step at a time, and none while the engines'
 * TTFT window still holds first tokens from before the last engine came up
 * (a p90 measured on less capacity says nothing about the new one), so a
 * breach does not keep adding engines while they start. Headroom: while the
 * sequences held grow (more than at some sample of the last
 * {@link ENGINE_GROWTH_WINDOW_MS}) and fill more than
 * {@link ENGINE_SEQUENCE_TARGET} of the ready engines' sequences, one engine
 * more than are ready, so it starts before the last sequence is taken; a
 * pool whose fill is flat finds sequences as sessions leave. The fill counts
 * every session in a sequence, also one whose call waits a moment for a
 * runner: the router refuses a new session when every sequence is held,
 * whatever holds it. Only sessions waiting on a pool the tools hold up (its
 * calls wait past the budget) are left out, as in the count above. KV pressure,
 * the TTFT objective and headroom each ask for one engine more than are
 * ready, never more together, and an engine already starting (replicas above
 * the ready count) meets them all.
 */
import { ENGINE_SEQUENCE_TARGET, KV_PRESSURE } from "./policy.js";
import type { EngineLoad } from "./signals.js";

export interface EngineDemand {
  /** Engines this sample asks for; null when no engine reports (nothing to size from). */
  engines: number | null;
  load: EngineLoad;
  /** Sessions generating or waiting for a sequence: the active ones not parked on a tool call. */
  generating: number;
  /** Sessions counted as parked on tool calls (the app's outstanding calls, at most the active sessions). */
  parkedOnTools: number;
  /** Of those, the ones counted as parked on calls that wait for a runner (the pending calls, at most the active sessions). */
  waitingForRunners: number;
  /** Sessions that hold or want a sequence, less those waiting for a runner: what the engines are sized for. */
  sequencesWanted: number;
  /** KV cells in use as a share of the pool's (0 when unknown). */
  kvShare: number;
  /** Queued sessions beyond what the tool backlog explains, or queued under KV pressure: generation holds tasks up. */
  backlogged: boolean;
  /** Requests the routers hold for want of a ready engine, or of a free sequence (every engine full: the capacity queue). */
  heldRequests: number;
  /** No session at all, and no request held. */
  idle: boolean;
  /** The app's `slo.ttftP90Ms`, when it has one. */
  ttftTargetMs?: number;
  /** The engines' recent TTFT p90 exceeds the app's objective. */
  ttftOverSlo: boolean;
  /**
   * Sequences held (sessions in a sequence, at most the engines' sequences),
   * less those held by sessions waiting on a pool the tools hold up: the fill
   * the headroom rule reads.
   */
  sequencesHeld: number;
  /** Set when headroom alone raised the count: the fewest sequences held over the growth window before this sample. */
  headroomFrom?: number;
}

export interface EngineDemandInput {
  /** Calls outstanding on the app's tool pools (waiting plus running). */
  outstandingToolCalls: number;
  /** Of those, the calls no runner has taken yet (default 0). */
  pendingToolCalls?: number;
  /** Of those, the calls waiting on pools the tools hold up (their runner demand is backlogged; default 0). */
  backloggedToolCalls?: number;
  /** Requests the routers hold for the pool (default 0). */
  heldRequests?: number;
  /** The app's `slo.ttftP90Ms` (absent: no TTFT objective). */
  ttftTargetMs?: number;
  /**
   * More engines became ready within the engines' TTFT window: the p90 still
   * counts first tokens from before they came up, so it adds no engine.
   */
  ttftPredatesCapacity?: boolean;
  /** The fewest sequences held at any sample of the growth window before this one (absent: no such sample). */
  sequencesHeldLow?: number;
}

export function engineDemand(load: EngineLoad, input: EngineDemandInput): EngineDemand {
  const { outstandingToolCalls, pendingToolCalls = 0, backloggedToolCalls = 0, heldRequests = 0, ttftTargetMs, ttftPredatesCapacity = false, sequencesHeldLow } = input;
  const target = ttftTargetMs !== undefined ? { ttftTargetMs } : {};
  const parkedOnTools = Math.min(load.activeSessions, outstandingToolCalls);
  const generating = load.activeSessions - parkedOnTools;
  const waitingForRunners = Math.min(load.activeSessions, pendingToolCalls, parkedOnTools);
  // Requests a router queues while every engine is full want a sequence, as sessions queued in an engine do.
  const sequencesWanted = load.activeSessions - waitingForRunners + heldRequests;
  const kvShare = load.kvCellsTotal > 0 ? load.kvCellsUsed / load.kvCellsTotal : 0;
  const idle = load.activeSessions === 0 && load.queuedSessions === 0 && heldRequests === 0;
  const inSequences = Math.min(load.totalSequences, Math.max(0, load.activeSessions - load.queuedSessions));
  const sequencesHeld = Math.max(0, inSequences - Math.min(waitingForRunners, backloggedToolCalls));
  const counts = { generating, parkedOnTools, waitingForRunners, sequencesWanted, sequencesHeld, kvShare, heldRequests };
  if (load.engines === 0) return { engines: null, load, ...counts, backlogged: false, idle, ...target, ttftOverSlo: false };
  const sequencesPerEngine = Math.max(1, load.totalSequences / load.engines);
  let engines = Math.ceil(sequencesWanted / sequencesPerEngine);
  const kvPressure = kvShare >= KV_PRESSURE && load.queuedSessions > 0 && generating > 0;
  if (kvPressure) engines = Math.max(engines, load.engines + 1);
  const ttftOverSlo = ttftTargetMs !== undefined && load.ttftP90Ms !== undefined && load.ttftP90Ms > ttftTargetMs;
  if (ttftOverSlo && !ttftPredatesCapacity) engines = Math.max(engines, load.engines + 1);
  const growing = sequencesHeldLow !== undefined && sequencesHeld > sequencesHeldLow;
  const headroom = growing && sequencesHeld > ENGINE_SEQUENCE_TARGET * load.totalSequences && engines < load.engines + 1;
  if (headroom) engines = load.engines + 1;
  const backlogged = ttftOverSlo || (load.queuedSessions + heldRequests > 0 && (kvPressure || sequencesWanted > load.totalSequences));
  return { engines, load, ...counts, backlogged, idle, ...target, ttftOverSlo, ...(headroom ? { headroomFrom: sequencesHeldLow } : {}) };
}
