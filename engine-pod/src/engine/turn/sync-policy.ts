/**
 * @module The `sync` calling mode (AsyncLM §6.1 baseline): decoding stops at
 * each call; once its result is in, the session re-enters as a new request
 * (history plus result), reusing its resident prefix when `prefixReuse` is on.
 */
import { eosAfterTurn, finish, NONE, stopOrWait, WAIT, type TurnPolicy } from "./turn-policy.js";

export const SYNC_POLICY: TurnPolicy = {
  restartable: false,
  onCall: (_view, call) => [{ type: "dispatch", call }, WAIT],
  onCallError: (_view, id, failure) => [{ type: "error", id, failure }, WAIT],
  atToken: () => NONE,
  // Re-entered with whatever arrived at once.
  onEos: (view) => eosAfterTurn(view, WAIT),
  // Sync modes have no pause: the request stops, and a new one starts when there is something to read.
  onTrap: (view) => stopOrWait(view),
  onMaxTokens: () => [finish("max_tokens")],
  // Everything is delivered by re-entry, never into the live stream.
  deliver: () => NONE,
};
