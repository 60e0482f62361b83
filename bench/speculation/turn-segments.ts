/**
 * @module A finished session's turns, read from its event times (engine
 * clock, ms since accepted): turn i runs from its start (the session's
 * start, then each result's entry) to its call (G_i, the main model's
 * generation), then to the call's result entering the context (the tool
 * and the re-entry). What follows the last result is the tail. The bench's
 * chain tasks call one tool per turn, so a call's result is the next result
 * event after it.
 */
import type { SessionEvent } from "../../common/src/index.js";
import type { MeasuredTurn } from "../../engine-pod/src/speculation/analytic.js";

export function turnSegments(events: readonly SessionEvent[], toolMs: readonly number[]): { turns: MeasuredTurn[]; tailMs: number } {
  const turns: MeasuredTurn[] = [];
  let start = 0;
  let call: number | undefined;
  let end = 0;
  for (const e of events) {
    if (e.type === "call" && call === undefined) call = e.t;
    else if (e.type === "interrupt" && (e.kind === "tool_result" || e.kind === "tool_error") && call !== undefined) {
      const tool = toolMs[turns.length] ?? 0;
      const waited = e.t - call;
      turns.push({ generationMs: call - start, toolMs: tool, reentryMs: Math.max(0, waited - tool) });
      start = e.t;
      call = undefined;
    } else if (e.type === "done") end = e.t;
  }
  return { turns, tailMs: Math.max(0, end - start) };
}
