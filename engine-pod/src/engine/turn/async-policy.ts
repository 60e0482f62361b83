/**
 * @module The `async` calling mode (AsyncLM): calls run while decoding goes
 * on; results are injected into the live sequence at the next safe token
 * boundary; a trap pauses the sequence until the next interrupt.
 */
import { eosAfterTurn, finish, INJECT, NONE, TRAP, type TurnPolicy } from "./turn-policy.js";

export const ASYNC_POLICY: TurnPolicy = {
  restartable: false,
  onCall: (_view, call) => [{ type: "dispatch", call }],
  // The model reads the error as an interrupt; nothing else happens.
  onCallError: (_view, id, failure) => [{ type: "error", id, failure }],
  atToken: () => NONE,
  onEos: (view) => eosAfterTurn(view, INJECT),
  onTrap: (view) => {
    if (view.queued > 0) return NONE; // injected right after this token, no pause
    // No call is outstanding, so only a user could wake it: unless a script says one
    // is coming, the trap ends the turn (waiting would hold the slot indefinitely).
    if (view.outstanding === 0 && !view.expectsUserInterrupt) return [finish("eos")];
    return [TRAP];
  },
  onMaxTokens: () => [finish("max_tokens")],
  deliver: () => [INJECT],
};
