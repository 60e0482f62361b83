/**
 * @module How many engines one sample of an EnginePool asks for. Sessions
 * count against sequences, except those parked on a tool call: a session
 * waiting for its tool holds a sequence but needs no generation, and more
 * engines would not make its tool answer sooner. So queueing that the tool
 * backlog explains does not grow the engines; queueing beyond it, or queued
 * sessions under KV pressure, does. Requests the routers hold for want of a
 * ready engine are work too: a pool that holds them is not idle.
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
}

export function engineDemand(load: EngineLoad, outstandingToolCalls: number, heldRequests = 0): EngineDemand {
  const parkedOnTools = Math.min(load.activeSessions, outstandingToolCalls);
  const generating = load.activeSessions - parkedOnTools;
  const kvShare = load.kvCellsTotal > 0 ? load.kvCellsUsed / load.kvCellsTotal : 0;
  const idle = load.activeSessions === 0 && load.queuedSessions === 0 && heldRequests === 0;
  if (load.engines === 0) return { engines: null, load, generating, parkedOnTools, kvShare, heldRequests, backlogged: false, idle };
  const sequencesPerEngine = Math.max(1, load.totalSequences / load.engines);
  let engines = Math.ceil(generating / sequencesPerEngine);
  const kvPressure = kvShare >= KV_PRESSURE && load.queuedSessions > 0 && generating > 0;
  if (kvPressure) engines = Math.max(engines, load.engines + 1);
  const backlogged = load.queuedSessions > 0 && (kvPressure || generating > load.totalSequences);
  return { engines, load, generating, parkedOnTools, kvShare, heldRequests, backlogged, idle };
}
