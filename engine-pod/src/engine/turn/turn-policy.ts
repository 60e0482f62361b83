/**
 * @module The contract of a turn policy: how one calling mode reacts to a
 * call, a call that failed validation, a sampled token, EOS, a trap, the
 * token limit, and interrupts waiting to be delivered. A policy is a set of
 * pure functions: it reads a {@link TurnView} (plain, read-only data) and
 * returns a list of {@link TurnDecision}s, which the engine core applies in
 * order — as vLLM's scheduler returns a `SchedulerOutput`. Adding a mode adds
 * a policy file; nothing else depends on the mode.
 */
import type { SessionEvent } from "../../../../common/src/index.js";
import type { MonitorEvent } from "../../cml/index.js";

export type DoneReason = Extract<SessionEvent, { type: "done" }>["reason"];

/** How an OpenAI completion ended (its `finish_reason`, plus `trap` for raw CML clients). */
export type FinishReason = "stop" | "length" | "tool_calls" | "trap";

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

/** What a policy may know about its session. Plain data, built by the core for each hook. */
export interface TurnView {
  /** Call blocks (valid or not) since the turn began. */
  readonly turnCalls: number;
  /** Valid calls held (not dispatched), in order: the turn's calls until its end, or a completion's tool calls. */
  readonly held: readonly TurnCall[];
  /** Interrupts queued and not yet delivered. */
  readonly queued: number;
  /** Calls dispatched whose results are not in yet. */
  readonly outstanding: number;
  /** A scripted policy writes the tokens (and so its own turns). */
  readonly scripted: boolean;
  /** A scripted policy still needs a user interrupt that no outstanding call will deliver. */
  readonly expectsUserInterrupt: boolean;
}

/** One thing the core does for a policy, in list order. Plain data. */
export type TurnDecision =
  /** Start the call on the executor (not awaited: decoding goes on); a held call leaves the held list. */
  | { readonly type: "dispatch"; readonly call: TurnCall }
  /** Keep the call, not dispatched, in the held list. */
  | { readonly type: "hold"; readonly call: TurnCall }
  /** Queue the refused call's error line as an interrupt for the model to read. */
  | { readonly type: "error"; readonly id: string; readonly failure: CallFailure }
  /** The turn's calls are complete: its call count starts again; `dropPending`: the pending token is not fed. */
  | { readonly type: "endTurn"; readonly dropPending: boolean }
  /** Append the queued interrupts after the pending token, unless a critical section defers them. */
  | { readonly type: "inject" }
  /** Stop decoding until the turn's results are in; the session then re-enters as a new request. */
  | { readonly type: "wait" }
  /** Pause until the next interrupt (the KV manager chooses keep / swap / recompute). */
  | { readonly type: "trap" }
  /** End the session; a completion also says how (`finishReason`). */
  | { readonly type: "finish"; readonly reason: DoneReason; readonly finishReason?: FinishReason };

export interface TurnPolicy {
  /** A valid call block ended (`[END]` sampled). */
  onCall(view: TurnView, call: TurnCall): readonly TurnDecision[];
  /** A call block failed to parse or validate (the `call_error` event is already out). */
  onCallError(view: TurnView, id: string, failure: CallFailure): readonly TurnDecision[];
  /**
   * Before a sampled token is fed. Any decision returned ends the turn at this
   * token, which is then not fed; none: decoding goes on. `wasCritical`: the
   * monitor was inside a block before it.
   */
  atToken(view: TurnView, wasCritical: boolean, events: readonly MonitorEvent[]): readonly TurnDecision[];
  /** EOS outside any block. The EOS token is never fed. */
  onEos(view: TurnView): readonly TurnDecision[];
  /** `[TRAP] [END]` sampled. */
  onTrap(view: TurnView): readonly TurnDecision[];
  /** The session's maxTokens is reached. */
  onMaxTokens(view: TurnView): readonly TurnDecision[];
  /** At a token boundary with interrupts queued: inject them now, or leave them for re-entry. */
  deliver(view: TurnView): readonly TurnDecision[];
  /**
   * Its client may abort it and restart at once with the same history plus
   * more (async-naive clients): a cancelled one's cells stay resident as a
   * prefix, and a new request extending its prompt waits briefly for it to end.
   */
  readonly restartable: boolean;
}

export const NONE: readonly TurnDecision[] = [];
export const WAIT: TurnDecision = { type: "wait" };
export const TRAP: TurnDecision = { type: "trap" };
export const INJECT: TurnDecision = { type: "inject" };
export const finish = (reason: DoneReason, finishReason?: FinishReason): TurnDecision =>
  finishReason === undefined ? { type: "finish", reason } : { type: "finish", reason, finishReason };

/**
 * Turn-at-text rule of syncParallel and OpenAI completions: the turn ends at
 * the first non-call continuation after a call (not under a script, which
 * writes its own turns).
 */
export function textEndsTurn(view: TurnView, wasCritical: boolean, events: readonly MonitorEvent[]): boolean {
  if (view.turnCalls === 0 || wasCritical || view.scripted) return false;
  return events.some((e) => e.type === "text" && e.text.trim() !== "") && !events.some((e) => e.type === "call_start");
}

/** EOS or a trap in a stop-and-re-enter mode, once nothing of the turn is left to dispatch. */
export function stopOrWait(view: TurnView): readonly TurnDecision[] {
  return view.queued === 0 && view.outstanding === 0 && !view.expectsUserInterrupt ? [finish("eos")] : [WAIT];
}

/**
 * EOS with nothing left of the turn: read what arrived (`deliver`: injected
 * in place, or by re-entry), wait for what is outstanding, or stop.
 */
export function eosAfterTurn(view: TurnView, deliver: TurnDecision): readonly TurnDecision[] {
  // Interrupts already arrived: the model reads them instead of stopping.
  if (view.queued > 0) return [deliver];
  // AsyncLM: the session cannot end while results are outstanding; wait for them.
  if (view.outstanding > 0) return [TRAP];
  return [finish("eos")];
}
