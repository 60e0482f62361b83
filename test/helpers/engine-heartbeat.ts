import type { EngineHeartbeat } from "../../common/src/protocol/engine-heartbeat.js";

/**
 * A valid engine heartbeat for tests: one idle, ready engine with one free
 * sequence and nothing resident. Each test overrides only the fields its
 * case is about, so the fields it does not name stay valid as the protocol
 * grows.
 */
export function engineHeartbeat(overrides: Partial<EngineHeartbeat> = {}): EngineHeartbeat {
  return {
    pod: "engine-0",
    endpoint: "http://127.0.0.1:1",
    pool: { namespace: "default", name: "pool" },
    model: "test",
    ready: true,
    freeSequences: 1,
    totalSequences: 1,
    queuedSessions: 0,
    activeSessions: 0,
    kvCellsUsed: 0,
    kvCellsTotal: 1000,
    tokensPerSecond: 0,
    prefixes: [],
    at: Date.now(),
    ...overrides,
  };
}
