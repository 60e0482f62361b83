/**
 * @module The contract of a turn policy: how one calling mode reacts to a
 * call, a call that failed validation, EOS, a trap, the token limit, and
 * interrupts waiting to be delivered. The engine core calls these hooks and
 * nothing else depends on the mode: adding a mode adds a policy file.
 * Policies act only through {@link TurnOps}, which the core implements.
 */
import type { SessionEvent } from "../../../../common/src/index.js";
import type { MonitorEvent } from "../../cml/index.js";
import type { SessionState } from "../session-state.js";

export type DoneReason = Extract<SessionEvent, { type: "done" }>["reason"];

/** Why a call block was refused (its code begins the error line the model reads). */
export interface CallFailure {
  code: string;
  message: string;
}

/** A validated call block. */
export interface TurnCall {
  id: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** What a policy may ask the engine core to do. */
export interface TurnOps {
  /** Starts a validated call on the executor (not awaited: decoding goes on). */
  dispatch(s: SessionState, call: TurnCall): void;
  /** Ends the session. */
  finish(s: SessionState, reason: DoneReason): void;
  /** Pauses the session until its next interrupt (the KV manager chooses keep / swap / recompute). */
  trap(s: SessionState): void;
  /** Stops decoding until the turn's results are in; the session then re-enters as a new request. */
  wait(s: SessionState): void;
  /** Appends the queued interrupts after the pending token, unless a critical section defers them. */
  inject(s: SessionState): void;
  /** Queues an error interrupt (an invalid call) for the model to read. */
  queueError(s: SessionState, id: string, failure: CallFailure): void;
  /** Interrupts queued and not yet delivered. */
  queued(s: SessionState): number;
  /** A scripted policy still needs a user interrupt that no outstanding call will deliver. */
  expectsUserInterrupt(s: SessionState): boolean;
}

export interface TurnPolicy {
  /** A valid call block ended (`[END]` sampled). */
  onCall(s: SessionState, call: TurnCall, ops: TurnOps): void;
  /** A call block failed to parse or validate (the `call_error` event is already out). */
  onCallError(s: SessionState, id: string, failure: CallFailure, ops: TurnOps): void;
  /**
   * Before a sampled token is fed: true when the policy ends the turn at it
   * (the token is dropped). `wasCritical`: the monitor was inside a block before it.
   */
  endsTurnAt(s: SessionState, wasCritical: boolean, events: readonly MonitorEvent[], ops: TurnOps): boolean;
  /** EOS outside any block. The EOS token is never fed. */
  onEos(s: SessionState, ops: TurnOps): void;
  /** `[TRAP] [END]` sampled. */
  onTrap(s: SessionState, ops: TurnOps): void;
  /** The session's maxTokens is reached. */
  onMaxTokens(s: SessionState, ops: TurnOps): void;
  /** At a token boundary with interrupts queued: inject them now, or leave them for re-entry. */
  deliver(s: SessionState, ops: TurnOps): void;
  /**
   * Its client may abort it and restart at once with the same history plus
   * more (async-naive clients): a cancelled one's cells stay resident as a
   * prefix, and a new request extending its prompt waits briefly for it to end.
   */
  readonly restartable: boolean;
}

/**
 * Turn-at-text rule of syncParallel and OpenAI completions: the turn ends at
 * the first non-call continuation after a call (not under a script, which
 * writes its own turns).
 */
export function textEndsTurn(s: SessionState, wasCritical: boolean, events: readonly MonitorEvent[]): boolean {
  if (s.turnCalls === 0 || wasCritical || s.scripted) return false;
  return events.some((e) => e.type === "text" && e.text.trim() !== "") && !events.some((e) => e.type === "call_start");
}

/** EOS or a trap in a stop-and-re-enter mode, once nothing of the turn is left to dispatch. */
export function stopOrWait(s: SessionState, ops: TurnOps): void {
  if (ops.queued(s) === 0 && s.outstanding.size === 0 && !ops.expectsUserInterrupt(s)) ops.finish(s, "eos");
  else ops.wait(s);
}

/** EOS with nothing left of the turn: read what arrived, wait for what is outstanding, or stop. */
export function eosAfterTurn(s: SessionState, ops: TurnOps, deliver: () => void): void {
  if (ops.queued(s) > 0) {
    // Interrupts already arrived: the model reads them instead of stopping.
    deliver();
    return;
  }
  if (s.outstanding.size > 0) {
    // AsyncLM: the session cannot end while results are outstanding; wait for them.
    ops.trap(s);
    return;
  }
  ops.finish(s, "eos");
}
