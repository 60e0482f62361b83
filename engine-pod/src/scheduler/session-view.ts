/**
 * @module A session as the scheduler sees it: plain data the engine builds
 * each step (the scheduler and its batch cap read it).
 */
/** A session as the scheduler sees it. Plain data, built by the engine each step. */
export interface SessionView {
  readonly id: string;
  readonly state: "filling" | "active" | "trapped" | "waiting" | "busy" | "done";
  /** Sequence slot held; -1 while its paused state lives outside the context (slot lent out). */
  readonly slot: number;
  /** Tokens it would evaluate in the next step. */
  readonly feed: number;
  /** Interrupts queued, not yet delivered. */
  readonly queued: number;
  /** Calls running. */
  readonly outstanding: number;
  readonly cancelRequested: boolean;
  /** Higher first. */
  readonly priority: number;
  readonly decodedTokens: number;
  readonly maxTokens: number;
  /** Most sequences in a step's batch while this session is in it (a latency-critical request); absent: no cap. */
  readonly maxBatch?: number;
}
