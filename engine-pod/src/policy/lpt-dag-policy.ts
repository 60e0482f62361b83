/**
 * @module The LPT oracle over a known call DAG (AsyncLM §4.1, the paper's
 * "cheat sheet"): at each decision point emit the ready call with the longest
 * estimated latency (ready = every dependency's result injected, and the user
 * interrupt that introduces it, if any), optional
 * filler text between calls, `[TRAP][END]` when nothing is ready but results
 * are pending, and the final text then EOS when every result is in.
 */
import type { Token } from "node-llama-cpp";
import { formatCallBlock, formatTrapBlock, type ScriptedCall, type ScriptedPolicySpec } from "../../../common/src/index.js";
import { formatCallBody } from "./call-format.js";
import type { PolicyStep, PolicyTokenizer, PolicyView, TokenPolicy } from "./policy.js";

type LptSpec = Extract<ScriptedPolicySpec, { type: "lpt-dag" }>;

/** Filler words for "thinking" tokens; plain words of the generated vocabulary. */
const FILLER = " let me check the next call and wait";

export class LptDagPolicy implements TokenPolicy {
  private queue: Token[] = [];
  private finished = false;
  private readonly filler: Token[];

  constructor(
    private readonly spec: LptSpec,
    private readonly tok: PolicyTokenizer,
  ) {
    const unit = tok.tokenizeText(FILLER);
    this.filler = unit.length === 0 ? [] : unit;
  }

  next(view: PolicyView): PolicyStep {
    if (this.queue.length === 0) this.decide(view);
    const token = this.queue.shift();
    return token ?? "eos";
  }

  peek(view: PolicyView, n: number): Token[] {
    if (this.queue.length === 0) this.decide(view);
    return this.queue.slice(0, n);
  }

  expectsInterrupt(view: PolicyView): boolean {
    // Calls not yet emitted can only become ready through injected interrupts.
    return this.spec.calls.some((c) => !view.emittedCalls.has(c.id));
  }

  /** The ready call with the longest estimated latency (declaration order breaks ties). */
  static pickReady(calls: readonly ScriptedCall[], view: PolicyView): ScriptedCall | undefined {
    let best: ScriptedCall | undefined;
    for (const call of calls) {
      if (view.emittedCalls.has(call.id)) continue;
      if (!call.dependsOn.every((d) => view.injected.has(d))) continue;
      // A call introduced by a user interrupt is unknown until that interrupt is in.
      if (call.afterInterrupt !== undefined && !view.injected.has(call.afterInterrupt)) continue;
      if (best === undefined || (call.estimatedLatencyMs ?? 0) > (best.estimatedLatencyMs ?? 0)) best = call;
    }
    return best;
  }

  private decide(view: PolicyView): void {
    if (this.finished) return; // queue stays empty → eos
    const ready = LptDagPolicy.pickReady(this.spec.calls, view);
    if (ready !== undefined) {
      const emittedHere = this.spec.calls.some((c) => view.emittedCalls.has(c.id));
      const think = emittedHere ? (this.spec.thinkTokens ?? 0) : (this.spec.leadTokens ?? 0);
      if (think > 0) this.queue.push(...this.fillerTokens(think));
      const body = formatCallBody(ready.tool, ready.arguments, this.spec.callStyle ?? "json");
      this.queue.push(...this.tok.tokenizeCml(formatCallBlock(body, ready.id)));
      return;
    }
    const pending = this.spec.calls.some((c) => view.emittedCalls.has(c.id) && !view.injected.has(c.id));
    const unemitted = this.spec.calls.some((c) => !view.emittedCalls.has(c.id));
    if (pending || unemitted) {
      // Nothing is ready: wait for the next interrupt.
      this.queue.push(...this.tok.tokenizeCml(formatTrapBlock()));
      return;
    }
    this.finished = true;
    if (this.spec.finalText !== undefined && this.spec.finalText !== "") this.queue.push(...this.tok.tokenizeText(this.spec.finalText));
  }

  private fillerTokens(n: number): Token[] {
    const out: Token[] = [];
    if (this.filler.length === 0) return out;
    while (out.length < n) out.push(...this.filler);
    return out.slice(0, n);
  }
}
