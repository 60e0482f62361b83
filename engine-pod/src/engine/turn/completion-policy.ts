/**
 * @module OpenAI-compatible completions: one stateless request. Calls are
 * held as the completion's `tool_calls`, never run; with `stopAtCalls:
 * "turn"` generation stops after the turn's call blocks, with `"never"`
 * (async-naive clients) it goes on to EOS, the token limit or a trap.
 * `maxCalls` (OpenAI `parallel_tool_calls: false`, Responses' `max_tool_calls`): it ends at that many calls.
 */
import { finish, NONE, textEndsTurn, type TurnPolicy } from "./turn-policy.js";

/** The completion policy for one request's `stopAtCalls`. */
export function completionPolicy(stopAtCalls: "turn" | "never", opts: { maxCalls?: number } = {}): TurnPolicy {
  const raw = stopAtCalls === "never";
  return {
    /** An aborted completion's cells are still a valid prefix: async-naive clients restart with the same history. */
    restartable: true,
    onCall: (view, call) => (opts.maxCalls !== undefined && view.held.length + 1 >= opts.maxCalls ? [{ type: "hold", call }, finish("eos", raw ? "stop" : "tool_calls")] : [{ type: "hold", call }]),
    // The client sees only valid calls; nothing is run.
    onCallError: () => NONE,
    atToken: (view, wasCritical, events) => (!raw && textEndsTurn(view, wasCritical, events) ? [finish("eos", "tool_calls")] : NONE),
    onEos: (view) => [finish("eos", view.turnCalls > 0 && !raw ? "tool_calls" : "stop")],
    // The trap block is part of the completion; nothing more to sample.
    onTrap: (view) => (raw ? [finish("eos", "trap")] : view.turnCalls > 0 ? [finish("eos", "tool_calls")] : NONE),
    onMaxTokens: () => [finish("max_tokens")],
    // A completion has no interrupts.
    deliver: () => NONE,
  };
}
