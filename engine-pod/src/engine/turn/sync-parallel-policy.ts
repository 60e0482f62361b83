/**
 * @module The `syncParallel` calling mode (AsyncLM §6.1 baseline): the turn's
 * calls are collected until the turn ends (text after a call, EOS, a trap, or
 * the token limit), run together, and the session re-enters with all results.
 */
import type { MonitorEvent } from "../../cml/index.js";
import type { SessionState } from "../session-state.js";
import { eosAfterTurn, type CallFailure, stopOrWait, textEndsTurn, type TurnCall, type TurnOps, type TurnPolicy } from "./turn-policy.js";

export class SyncParallelTurnPolicy implements TurnPolicy {
  readonly restartable = false;
  /** Validated calls waiting for the turn's end. */
  private readonly collected: TurnCall[] = [];

  onCall(_s: SessionState, call: TurnCall): void {
    this.collected.push(call);
  }

  onCallError(s: SessionState, id: string, failure: CallFailure, ops: TurnOps): void {
    ops.queueError(s, id, failure);
  }

  endsTurnAt(s: SessionState, wasCritical: boolean, events: readonly MonitorEvent[], ops: TurnOps): boolean {
    if (!textEndsTurn(s, wasCritical, events)) return false;
    this.endTurn(s, "text", ops);
    return true;
  }

  onEos(s: SessionState, ops: TurnOps): void {
    if (this.collected.length > 0 || s.turnCalls > 0) this.endTurn(s, "eos", ops);
    else eosAfterTurn(s, ops, () => ops.wait(s));
  }

  onTrap(s: SessionState, ops: TurnOps): void {
    if (s.turnCalls > 0) this.endTurn(s, "trap", ops);
    else stopOrWait(s, ops);
  }

  onMaxTokens(s: SessionState, ops: TurnOps): void {
    if (s.turnCalls === 0) ops.finish(s, "max_tokens");
    else this.endTurn(s, "max_tokens", ops);
  }

  deliver(): void {
    // Results are delivered by re-entry.
  }

  /** The turn's calls are complete: run them together, then re-enter with their results. */
  private endTurn(s: SessionState, why: "text" | "eos" | "trap" | "max_tokens", ops: TurnOps): void {
    if (why === "text" || why === "eos") s.tokens.feed = [];
    s.turnCalls = 0;
    const calls = this.collected.splice(0);
    for (const c of calls) ops.dispatch(s, c);
    if (calls.length === 0 && ops.queued(s) === 0) ops.finish(s, why === "max_tokens" ? "max_tokens" : "eos");
    else ops.wait(s);
  }
}
