/**
 * @module The calling modes of the `openai` backend, as a table: how each
 * mode talks to the upstream (its own function calling, or CML text in the
 * stream), how a turn's calls run, what an arrival does to a request in
 * flight, and what a scripted turn writes. The session reads its row and has
 * no branch on the mode's name; a new mode is a new row.
 */
import { ErrorCode, InterlaceError, type CallingMode } from "../../../common/src/index.js";

export interface UpstreamMode {
  /**
   * Unscripted sessions: calls come as the upstream's own `tool_calls`
   * (`tools`: the standard tool loop) or as CML call blocks in the streamed
   * text (`cml`). Scripted sessions always write CML.
   */
  readonly calls: "tools" | "cml";
  /** The tool loop: a turn's calls run one after another, or all at once. */
  readonly dispatch: "sequential" | "together";
  /** An arrival stops the request in flight (outside a call block) and restarts it with the history plus the arrival (AsyncLM §4.4). */
  readonly restartOnArrival: boolean;
  /** A scripted turn writes the longest ready call, or every ready call. */
  readonly scriptedCalls: "one" | "all";
  /** A scripted turn ends with `[TRAP][END]` while results are pending (the model says it waits). */
  readonly scriptedTrap: boolean;
}

type ServedMode = Exclude<CallingMode, "async">;

export const UPSTREAM_MODES: Readonly<Record<ServedMode, UpstreamMode>> = {
  sync: { calls: "tools", dispatch: "sequential", restartOnArrival: false, scriptedCalls: "one", scriptedTrap: false },
  syncParallel: { calls: "tools", dispatch: "together", restartOnArrival: false, scriptedCalls: "all", scriptedTrap: false },
  asyncNaive: { calls: "cml", dispatch: "together", restartOnArrival: true, scriptedCalls: "all", scriptedTrap: true },
};

/** Why `async` is refused: the wording, stable for clients and the operator's Degraded reason. */
export const ASYNC_NEEDS_OWN_ENGINE =
  'mode "async" injects interrupts into a live sequence, which an upstream OpenAI-compatible server cannot do; use sync, syncParallel or asyncNaive on a --backend openai pool';

/** The row of a mode; `async` and unknown modes are refused with the reason. */
export function upstreamMode(mode: CallingMode): UpstreamMode {
  if (mode === "async") throw new InterlaceError(ErrorCode.BadRequest, ASYNC_NEEDS_OWN_ENGINE);
  const row = Object.hasOwn(UPSTREAM_MODES, mode) ? UPSTREAM_MODES[mode] : undefined;
  if (row === undefined) throw new InterlaceError(ErrorCode.BadRequest, `unknown mode "${String(mode)}"`);
  return row;
}
