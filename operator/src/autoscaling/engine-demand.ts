/**
 * @module How many engines one sample of an EnginePool asks for. Sessions
 * count against sequences, except those parked on a tool call: a session
 * waiting for its tool holds a sequence but needs no generation, and more
 * engines would not make its tool answer sooner. So queueing that the tool
 * backlog explains does not grow the engines; queueing beyond it, or queued
 * sessions under KV pressure, does. Requests the routers hold for want of a
 * ready engine are work too: a pool that holds them is not idle. An app's
 * TTFT objective exceeded by the engines' recent TTFT p90 asks for one engine
 * more than are ready now: one step at a time, and none while the engines'
 * TTFT window still holds first tokens from before the last engine came up
 * (a p90 measured on less capacity says nothing about the new one), so a
 * breach does not keep adding engines while they start.
 */
import { KV_PRESSURE } from "./policy.js";
import type { EngineLoad } from "./signals.js";

export interface EngineDemand {
  /** Engines this sample asks for; null when no engine reports (nothing to size from). */
  engines: number | null;
  load: EngineLoad;
  /** Sessions generating or waiting for a sequence: the active ones not parked on a tool call. */
  generating: number;
  /** Sessions counted as parked on tool calls (the app's outstanding calls, at most the active sessions). */
  parkedOnTools: number;
  /** KV cells in use as a share of the pool's (0 when unknown). */
  kvShare: number;
  /** Queued sessions beyond what the tool backlog explains, or queued under KV pressure: generation holds tasks up. */
  backlogged: boolean;
  /** Requests the routers hold for want of a ready engine. */
  heldRequests: number;
  /** No session at all, and no request held. */
  idle: boolean;
  /** The app's `slo.ttftP90Ms`, when it has one. */
  ttftTargetMs?: number;
  /** The engines' recent TTFT p90 exceeds the app's objective. */
  ttftOverSlo: boolean;
}

export interface EngineDemandInput {
  /** Calls outstanding on the app's tool pools (waiting plus running). */
  outstandingToolCalls: number;
  /** Requests the routers hold for the pool (default 0). */
  heldRequests?: number;
  /** The app's `slo.ttftP90Ms` (absent: no TTFT objective). */
  ttftTargetMs?: number;
  /**
   * More engines became ready within the engines' TTFT window: the p90 still
   * counts first tokens from before they came up, so it adds no engine.
   */
  ttftPredatesCapacity?: boolean;
}

export function engineDemand(load: EngineLoad, input: EngineDemandInput): EngineDemand {
  const { outstandingToolCalls, heldRequests = 0, ttftTargetMs, ttftPredatesCapacity = false } = input;
  const target = ttftTargetMs !== undefined ? { ttftTargetMs } : {};
  const parkedOnTools = Math.min(load.activeSessions, outstandingToolCalls);
  const generating = load.activeSessions - parkedOnTools;
  const kvShare = load.kvCellsTotal > 0 ? load.kvCellsUsed / load.kvCellsTotal : 0;
  const idle = load.activeSessions === 0 && load.queuedSessions === 0 && heldRequests === 0;
  if (load.engines === 0) return { engines: null, load, generating, parkedOnTools, kvShare, heldRequests, backlogged: false, idle, ...target, ttftOverSlo: false };
  const sequencesPerEngine = Math.max(1, load.totalSequences / load.engines);
  let engines = Math.ceil(generating / sequencesPerEngine);
  const kvPressure = kvShare >= KV_PRESSURE && load.queuedSessions > 0 && generating > 0;
  if (kvPressure) engines = Math.max(engines, load.engines + 1);
  const ttftOverSlo = ttftTargetMs !== undefined && load.ttftP90Ms !== undefined && load.ttftP90Ms > ttftTargetMs;
  if (ttftOverSlo && !ttftPredatesCapacity) engines = Math.max(engines, load.engines + 1);
  const backlogged = ttftOverSlo || (load.queuedSessions > 0 && (kvPressure || generating > load.totalSequences));
  return { engines, load, generating, parkedOnTools, kvShare, heldRequests, backlogged, idle, ...target, ttftOverSlo };
}
