/**
 * @module What the engine core asks of speculation (paper §3.2, Algorithm 5),
 * implemented outside the engine by the speculation layer. The core calls it
 * at two points of a call block:
 * - O2, when the call body begins (after `[HEAD]`, or after `[CALL]` for a
 *   block without an id): the text of a cached call of the session to propose
 *   as a draft; the core validates its tokens in one forward pass;
 * - O3, when the call ends: a cached result for exactly this call that is
 *   already there, which the core appends at once instead of stopping or
 *   trapping (the sequence never leaves the batch).
 */
import type { Token } from "node-llama-cpp";
import type { TurnCall } from "./turn/index.js";

export interface SpeculationHook {
  /** O2: the call body to propose (CML text of the body, without markers), or undefined. */
  draftBody(sessionId: string): string | undefined;
  /** O2 accounting: draft tokens proposed and accepted in one pass. */
  validated(sessionId: string, proposed: number, accepted: number): void;
  /** O3: the settled cached result of exactly this call (taken: delivered once), or undefined. */
  settledResult(sessionId: string, call: TurnCall): { ok: boolean; output: string } | undefined;
  /** Most draft tokens proposed per validation pass. */
  readonly maxDraftTokens: number;
}

/** Per-session O2 state kept by the core between the token that opens a body and the next step. */
export interface PendingDraft {
  tokens: Token[];
}
