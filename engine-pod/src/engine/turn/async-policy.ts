/**
 * @module The `async` calling mode (AsyncLM): calls run while decoding goes
 * on; results are injected into the live sequence at the next safe token
 * boundary; a trap pauses the sequence until the next interrupt.
 */
import type { SessionState } from "../session-state.js";
import { eosAfterTurn, type CallFailure, type TurnCall, type TurnOps, type TurnPolicy } from "./turn-policy.js";

export class AsyncTurnPolicy implements TurnPolicy {
  readonly restartable = false;

  onCall(s: SessionState, call: TurnCall, ops: TurnOps): void {
    ops.dispatch(s, call);
  }

  onCallError(s: SessionState, id: string, failure: CallFailure, ops: TurnOps): void {
    // The model reads the error as an interrupt; nothing else happens.
    ops.queueError(s, id, failure);
  }

  endsTurnAt(): boolean {
    return false;
  }

  onEos(s: SessionState, ops: TurnOps): void {
    eosAfterTurn(s, ops, () => ops.inject(s));
  }

  onTrap(s: SessionState, ops: TurnOps): void {
    if (ops.queued(s) > 0) return; // injected right after this token, no pause
    if (s.outstanding.size === 0 && !ops.expectsUserInterrupt(s)) {
      // No call is outstanding, so only a user could wake it: unless a script says one
      // is coming, the trap ends the turn (waiting would hold the slot indefinitely).
      ops.finish(s, "eos");
      return;
    }
    ops.trap(s);
  }

  onMaxTokens(s: SessionState, ops: TurnOps): void {
    ops.finish(s, "max_tokens");
  }

  deliver(s: SessionState, ops: TurnOps): void {
    ops.inject(s);
  }
}
