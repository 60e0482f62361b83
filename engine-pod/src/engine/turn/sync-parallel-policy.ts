/**
 * @module The `syncParallel` calling mode (AsyncLM §6.1 baseline): the turn's
 * calls are held until the turn ends (text after a call, EOS, a trap, or the
 * token limit), run together, and the session re-enters with all results.
 */
import { eosAfterTurn, finish, NONE, stopOrWait, textEndsTurn, WAIT, type TurnDecision, type TurnPolicy, type TurnView } from "./turn-policy.js";

/** The turn's calls are complete: run the held ones together, then re-enter with their results. */
function endTurn(view: TurnView, why: "text" | "eos" | "trap" | "max_tokens"): readonly TurnDecision[] {
  const decisions: TurnDecision[] = [{ type: "endTurn", dropPending: why === "text" || why === "eos" }];
  for (const call of view.held) decisions.push({ type: "dispatch", call });
  decisions.push(view.held.length === 0 && view.queued === 0 ? finish(why === "max_tokens" ? "max_tokens" : "eos") : WAIT);
  return decisions;
}

export const SYNC_PARALLEL_POLICY: TurnPolicy = {
  restartable: false,
  onCall: (_view, call) => [{ type: "hold", call }],
  onCallError: (_view, id, failure) => [{ type: "error", id, failure }],
  atToken: (view, wasCritical, events) => (textEndsTurn(view, wasCritical, events) ? endTurn(view, "text") : NONE),
  onEos: (view) => (view.held.length > 0 || view.turnCalls > 0 ? endTurn(view, "eos") : eosAfterTurn(view, WAIT)),
  onTrap: (view) => (view.turnCalls > 0 ? endTurn(view, "trap") : stopOrWait(view)),
  onMaxTokens: (view) => (view.turnCalls === 0 ? [finish("max_tokens")] : endTurn(view, "max_tokens")),
  // Results are delivered by re-entry.
  deliver: () => NONE,
};
