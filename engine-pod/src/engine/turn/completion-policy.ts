/**
 * @module OpenAI-compatible completions: one stateless request. Calls are
 * collected as `tool_calls`, never run; with `stopAtCalls: "turn"` generation
 * stops after the turn's call blocks, with `"never"` (async-naive clients) it
 * goes on to EOS, the token limit or a trap.
 */
import type { MonitorEvent } from "../../cml/index.js";
import type { SessionState } from "../session-state.js";
import { textEndsTurn, type TurnCall, type TurnOps, type TurnPolicy } from "./turn-policy.js";

export type FinishReason = "stop" | "length" | "tool_calls" | "trap";

export class CompletionTurnPolicy implements TurnPolicy {
  /** An aborted completion's cells are still a valid prefix: async-naive clients restart with the same history. */
  readonly restartable = true;
  readonly toolCalls: TurnCall[] = [];
  finishReason: FinishReason | undefined;

  constructor(readonly stopAtCalls: "turn" | "never") {}

  /** Streams the completion to `onText`: every token's text, markers included, when raw; else the text outside blocks. */
  stream(s: SessionState, onText: (text: string) => void): void {
    if (this.stopAtCalls === "never") s.onRaw = onText;
    else {
      s.subscribe((e) => {
        if (e.type === "text") onText(e.text);
      });
    }
  }

  onCall(_s: SessionState, call: TurnCall): void {
    this.toolCalls.push(call);
  }

  onCallError(): void {
    // The client sees only valid calls; nothing is run.
  }

  endsTurnAt(s: SessionState, wasCritical: boolean, events: readonly MonitorEvent[], ops: TurnOps): boolean {
    if (this.stopAtCalls !== "turn" || !textEndsTurn(s, wasCritical, events)) return false;
    s.tokens.feed = [];
    s.turnCalls = 0;
    this.finishReason = "tool_calls";
    ops.finish(s, "eos");
    return true;
  }

  onEos(s: SessionState, ops: TurnOps): void {
    this.finishReason = s.turnCalls > 0 && this.stopAtCalls === "turn" ? "tool_calls" : "stop";
    ops.finish(s, "eos");
  }

  onTrap(s: SessionState, ops: TurnOps): void {
    if (this.stopAtCalls === "never" || s.turnCalls > 0) {
      this.finishReason = this.stopAtCalls === "never" ? "trap" : "tool_calls";
      // The trap block is part of the completion; nothing more to sample.
      ops.finish(s, "eos");
    }
  }

  onMaxTokens(s: SessionState, ops: TurnOps): void {
    ops.finish(s, "max_tokens");
  }

  deliver(): void {
    // A completion has no interrupts.
  }
}
