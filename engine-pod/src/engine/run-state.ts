/**
 * @module A session's run state and the table of legal moves between run
 * states. Every change goes through `SessionState.transition()`, which checks
 * this table: an illegal move is a bug in the engine and throws.
 */

/**
 * - `filling`: admitted; the slot is being prepared (cleared or its cached prefix trimmed).
 * - `active`: in the lockstep batch.
 * - `trapped`: paused until its next interrupt (trap, or EOS with results outstanding).
 * - `waiting`: sync modes, stopped until the turn's calls return.
 * - `busy`: a background KV operation (fill, pause, resume, re-entry, move) is running.
 * - `done`: finished; the slot is (being) released.
 */
export type RunState = "filling" | "active" | "trapped" | "waiting" | "busy" | "done";

/** Legal moves. A move to the current state is a no-op (except out of `done`, which is final). */
export const RUN_STATE_MOVES: Readonly<Record<RunState, readonly RunState[]>> = {
  filling: ["busy", "done"],
  busy: ["active", "trapped", "done"],
  active: ["busy", "trapped", "waiting", "done"],
  trapped: ["busy", "done"],
  waiting: ["busy", "done"],
  done: [],
};

export class IllegalTransitionError extends Error {
  override readonly name = "IllegalTransitionError";
  readonly code = "illegal_transition";
  constructor(
    readonly from: RunState,
    readonly to: RunState,
  ) {
    super(`illegal run-state move ${from} → ${to}`);
  }
}

/** Whether `from → to` is in the table (or a no-op). */
export function isLegalMove(from: RunState, to: RunState): boolean {
  if (from === to) return from !== "done";
  return RUN_STATE_MOVES[from].includes(to);
}

/** `to`, when `from → to` is legal; throws `IllegalTransitionError` otherwise. */
export function checkedMove(from: RunState, to: RunState): RunState {
  if (!isLegalMove(from, to)) throw new IllegalTransitionError(from, to);
  return to;
}
