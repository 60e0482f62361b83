/**
 * @module The LPT oracle (a scripted `lpt-dag` policy) replayed on an
 * upstream server, one request at a time: which text the next request must
 * produce, given the calls already emitted and the results already in: the
 * longest ready call or every ready call, then `[TRAP][END]` while results
 * are pending where the mode says so (`upstream-modes.ts`); once every result
 * is in, the final text; after it, nothing (a request that only reads what
 * arrived meanwhile). The upstream is held to that text by a
 * literal GBNF grammar, so every token is still a real forward pass of the
 * upstream's model (the own engine's scripted policies do the same per token).
 */
import { formatCallBlock, formatTrapBlock, InterlaceError, ErrorCode, type ScriptedCall, type ScriptedPolicySpec } from "../../../common/src/index.js";
import { gbnfLiteral } from "../cml/index.js";
import { formatCallBody } from "../policy/index.js";
import type { UpstreamMode } from "./upstream-modes.js";

type LptSpec = Extract<ScriptedPolicySpec, { type: "lpt-dag" }>;

export interface ScriptView {
  emitted: ReadonlySet<string>;
  injected: ReadonlySet<string>;
}

/** What the next request must do. */
export type ScriptStep = { type: "generate"; text: string; grammar: string } | { type: "wait" } | { type: "finish" };

export class ScriptedTurns {
  private readonly spec: LptSpec;
  private finalSent = false;

  constructor(
    spec: ScriptedPolicySpec,
    private readonly mode: Pick<UpstreamMode, "scriptedCalls" | "scriptedTrap">,
  ) {
    if (spec.type !== "lpt-dag") throw new InterlaceError(ErrorCode.BadRequest, `policy type "${spec.type}" needs the llama-cpp backend; the openai backend replays only lpt-dag policies`);
    this.spec = spec;
  }

  /** Ready calls, longest estimated latency first (declaration order breaks ties). */
  private ready(view: ScriptView): ScriptedCall[] {
    return this.spec.calls
      .filter((c) => !view.emitted.has(c.id) && c.dependsOn.every((d) => view.injected.has(d)) && (c.afterInterrupt === undefined || view.injected.has(c.afterInterrupt)))
      .sort((a, b) => (b.estimatedLatencyMs ?? 0) - (a.estimatedLatencyMs ?? 0));
  }

  next(view: ScriptView): ScriptStep {
    if (this.finalSent) return { type: "finish" };
    const ready = this.ready(view);
    const style = this.spec.callStyle ?? "json";
    const block = (c: ScriptedCall): string => formatCallBlock(formatCallBody(c.tool, c.arguments, style), c.id);
    const allIn = this.spec.calls.every((c) => view.injected.has(c.id));
    if (ready.length > 0) {
      const chosen = this.mode.scriptedCalls === "one" ? ready.slice(0, 1) : ready;
      let text = chosen.map(block).join("");
      const pendingAfter = this.spec.calls.some((c) => !view.injected.has(c.id));
      if (this.mode.scriptedTrap && pendingAfter) text += formatTrapBlock();
      return literal(text);
    }
    if (!allIn) return { type: "wait" };
    this.finalSent = true;
    const final = this.spec.finalText ?? "";
    return final === "" ? { type: "finish" } : literal(final);
  }
}

/** The request that writes nothing: the model reads what arrived after the script's last text (`root ::= ""` admits only the end). */
export const READ_ONLY = literal("");

function literal(text: string): Extract<ScriptStep, { type: "generate" }> {
  return { type: "generate", text, grammar: `root ::= ${gbnfLiteral(text)}` };
}
