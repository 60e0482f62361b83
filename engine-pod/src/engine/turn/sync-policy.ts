/**
 * @module The `sync` calling mode (AsyncLM §6.1 baseline): decoding stops at
 * each call; once its result is in, the session re-enters as a new request
 * (history plus result), reusing its resident prefix when `prefixReuse` is on.
 */
import type { SessionState } from "../session-state.js";
import { eosAfterTurn, type CallFailure, stopOrWait, type TurnCall, type TurnOps, type TurnPolicy } from "./turn-policy.js";

export class SyncTurnPolicy implements TurnPolicy {
  readonly restartable = false;

  onCall(s: SessionState, call: TurnCall, ops: TurnOps): void {
    ops.dispatch(s, call);
    ops.wait(s);
  }

  onCallError(s: SessionState, id: string, failure: CallFailure, ops: TurnOps): void {
    ops.queueError(s, id, failure);
    ops.wait(s);
  }

  endsTurnAt(): boolean {
    return false;
  }

  onEos(s: SessionState, ops: TurnOps): void {
    // Re-entered with whatever arrived at once.
    eosAfterTurn(s, ops, () => ops.wait(s));
  }

  onTrap(s: SessionState, ops: TurnOps): void {
    // Sync modes have no pause: the request stops, and a new one starts when there is something to read.
    stopOrWait(s, ops);
  }

  onMaxTokens(s: SessionState, ops: TurnOps): void {
    ops.finish(s, "max_tokens");
  }

  deliver(): void {
    // Everything is delivered by re-entry, never into the live stream.
  }
}
