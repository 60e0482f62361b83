/**
 * @module The engine core: the decode loop and its step. Each step asks the
 * scheduler for a plan (plain data), applies its state changes (cancel; and
 * through `KvWork` resume, re-entry, compaction move), runs the batch — every active sequence
 * advances one token, or one prefill chunk — feeds each sampled token to the
 * session's CML monitor and its turn policy, and applies the decisions the
 * policy returns (plain data; policies never touch the session).
 *
 * The loop owns every state transition: outside callers (interrupts, tool
 * results, cancel) only queue work and wake it, and KV operations that take
 * time (fill, pause, resume, re-entry, move, cleanup) run in the background
 * while the session sits in `busy`, so the batch never waits for them.
 */
import type { LlamaContextSequence, LlamaContextSequenceRepeatPenalty, SequenceEvaluateOptions, Token, TokenBias } from "node-llama-cpp";
import { CML, ErrorCode, type AnswerFormat, type InterruptKind, type Logger, type ToolSpec } from "../../../common/src/index.js";
import { formatCallError, parseCallBody, type MonitorEvent } from "../cml/index.js";
import { errorOutcome } from "../../../common/src/wire/index.js";
import type { KvManager } from "../kv/index.js";
import type { Admission, PrefixStore, Scheduler, SessionView, StepPlan } from "../scheduler/index.js";
import type { Executor, ToolCall, ToolResult } from "./executor.js";
import type { SpeculationHook } from "./speculation-hook.js";
import { InterruptManager } from "./interrupt-manager.js";
import { KvWork, type Handover, type RetentionSettings } from "./kv-work.js";
import { isPrefilling, PrefixFollowers, type StoreFill } from "./prefix-followers.js";
import { RateWindow } from "./rate-window.js";
import type { Runtime } from "./runtime.js";
import { acceptOnGrammar, type Sampling } from "./sampling.js";
import { median, type SessionState } from "./session-state.js";
import { TokenDistribution, withDistributions } from "./token-distribution.js";
import type { CallFailure, DoneReason, TurnCall, TurnDecision, TurnView } from "./turn/index.js";

/** Default time budget of one tool call when the spec gives no latency. */
const DEFAULT_CALL_BUDGET_MS = 60_000;
const MAX_DONE_SESSIONS = 1024;

export interface EngineCoreDeps {
  runtime: Runtime;
  kv: KvManager;
  scheduler: Scheduler;
  executor: Executor;
  sampling: Sampling;
  log: Logger;
  /** Idle finished sequences stay resident as a prefix cache. */
  prefixCache: boolean;
  /** Where apps' shared prefixes are kept beyond the session slots (size 0: off). */
  prefixStore: PrefixStore;
  /** Engine-side speculation (O2 draft validation, O3 append on a cache hit); absent: none. */
  speculation?: SpeculationHook;
  /** Which paused session gives its cells up when a request finds every sequence held. */
  retention: RetentionSettings;
}

export class EngineCore {
  /** Every session still readable (live and recently finished), in admission order. */
  readonly sessions = new Map<string, SessionState>();
  /** Sessions not yet done (or finishing their cleanup). */
  readonly live = new Set<SessionState>();
  readonly interrupts: InterruptManager;
  /** Admissions waiting for another session's prefill of the prefix they fork. */
  readonly followers = new PrefixFollowers();
  private readonly work: KvWork;
  readonly counters = { lastBatchSize: 0, tokensDecoded: 0, tokensPrefilled: 0 };
  readonly decodeRate = new RateWindow();
  private wakeResolve: (() => void) | undefined;
  private stopped = false;
  private loopDone: Promise<void> = Promise.resolve();
  private readonly runtime: Runtime;
  private readonly scheduler: Scheduler;
  private readonly log: Logger;
  /** O2: drafts to validate at the session's next step (set when a call body opens). */
  private readonly drafts = new Map<SessionState, Token[]>();

  constructor(private readonly deps: EngineCoreDeps) {
    this.runtime = deps.runtime;
    this.scheduler = deps.scheduler;
    this.log = deps.log;
    this.interrupts = new InterruptManager(deps.runtime, () => this.wake());
    this.work = new KvWork(deps.runtime, deps.kv, deps.scheduler, this.interrupts, deps.log, {
      background: (s, op) => this.background(s, op),
      inject: (s) => this.inject(s),
      finish: (s, reason) => this.finish(s, reason),
      countPrefill: (s, n) => this.countPrefill(s, n),
    }, deps.prefixStore, deps.retention);
  }

  start(): void {
    this.loopDone = this.loop().catch((err: unknown) => this.log.error({ err }, "decode loop crashed"));
  }

  /** Stops the loop (after the caller has let the sessions finish). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loopDone;
  }

  wake(): void {
    const r = this.wakeResolve;
    this.wakeResolve = undefined;
    r?.();
  }

  /** Plain views of the live sessions, in admission order (the scheduler's input). */
  views(): SessionView[] {
    return [...this.live].map((s) => ({
      id: s.id,
      state: s.state,
      slot: s.slot,
      feed: s.tokens.feed.length,
      queued: this.interrupts.pending(s),
      outstanding: s.outstanding.size,
      cancelRequested: s.cancelRequested,
      priority: s.config.priority,
      decodedTokens: s.usage.decodedTokens,
      maxTokens: s.config.maxTokens,
      ...(s.config.maxBatch !== undefined ? { maxBatch: s.config.maxBatch } : {}),
    }));
  }

  /** The prompt of each session slot's live session that is still prefilling it (index = slot). */
  fillingPrompts(): (readonly Token[] | undefined)[] {
    const prompts = new Array<readonly Token[] | undefined>(this.runtime.sequences.length);
    for (const s of this.live) if (isPrefilling(s)) prompts[s.slot] = s.tokens.prompt;
    return prompts;
  }

  /**
   * Takes in an admitted session; its sequence is prepared in the background
   * (after the fill it follows, if any, or once a paused session handing its
   * sequence over has left it).
   */
  add(s: SessionState, admission: Admission, reuse: boolean, handover?: Handover, storeFill?: StoreFill): void {
    this.sessions.set(s.id, s);
    this.live.add(s);
    this.constrain(s);
    this.log.debug(
      { session: s.id, app: s.sharedPrefix?.hashes[0], role: s.config.prefixRole, slot: admission.slot, reusePrefix: admission.reusePrefix, fork: admission.fork, handedOver: handover !== undefined, promptTokens: s.tokens.prompt.length },
      "session admitted",
    );
    this.work.fill(s, admission, reuse, this.following(s, admission, storeFill), handover?.ready);
  }

  /** What an admission whose fork source is still being filled waits for: the sequence to copy from once it holds the prefix. */
  private following(s: SessionState, admission: Admission, storeFill: StoreFill | undefined): Promise<LlamaContextSequence> | undefined {
    const fork = admission.fork;
    if (fork?.filling !== true) return undefined;
    const source = [...this.live].find((x) => x.slot === fork.from && isPrefilling(x));
    if (source !== undefined) return this.followers.follow(s, source, fork.tokens).then((src) => src.seq);
    const store = this.runtime.prefixStore[fork.from - this.runtime.sequences.length];
    if (storeFill?.sequence !== fork.from || store === undefined) return undefined;
    return this.followers.followStoreFill(storeFill.done).then(() => store);
  }

  /** Sequences paused sessions hold that the retention policy would give a request now. */
  reclaimable(): number {
    return this.work.reclaimable(this.live, (s) => this.interrupts.pending(s));
  }

  /** A paused session's sequence for a request that found every one held, or null; see `KvWork.handOver`. */
  handOver(priority: number): Handover | null {
    return this.work.handOver(this.live, priority, (s) => this.interrupts.pending(s));
  }

  /** Throws the request's error when its answer format cannot be compiled (the grammar is cached for its session). */
  checkAnswerFormat(format: AnswerFormat, allowCall: boolean, field?: string): void {
    this.deps.sampling.answerGrammarState(format, { allowCall, ...(field !== undefined ? { field } : {}) });
  }

  /** What the request fixes about its samples from the start: the call opener a tool choice forces, the answer grammar. */
  private constrain(s: SessionState): void {
    if (s.config.toolChoice !== undefined && s.config.tools.size > 0) s.forced.push(...this.runtime.markerIds[CML.CALL]);
    if (s.config.answerFormat !== undefined) s.kv.answerGrammar = this.deps.sampling.answerGrammarState(s.config.answerFormat, { allowCall: s.config.tools.size > 0 });
  }

  /** A session (not a completion) announces itself once admitted. */
  started(s: SessionState): void {
    s.emit({ type: "started", sessionId: s.id, mode: s.config.mode, promptTokens: s.tokens.prompt.length, scripted: s.scripted, t: s.now() });
  }

  /** Asks the loop to cancel the session at its next step. */
  cancel(s: SessionState): void {
    if (s.state === "done") return;
    s.cancelRequested = true;
    this.wake();
  }

  enqueue(s: SessionState, id: string, kind: InterruptKind, value: string): void {
    this.interrupts.enqueue(s, id, kind, value);
  }

  // ── the loop ──────────────────────────────────────────────────────────────

  private async loop(): Promise<void> {
    while (!this.stopped) {
      let plan: StepPlan | undefined;
      try {
        // The last step may have filled a prefix that an admission waits to fork.
        this.followers.settle();
        plan = this.scheduler.plan(this.views());
        this.apply(plan);
      } catch (err) {
        // A bookkeeping bug must not stop every session: log it and keep stepping.
        this.log.error({ err }, "decode loop housekeeping failed");
      }
      const batch = (plan?.batch ?? [])
        .map((item) => ({ item, s: this.sessions.get(item.id) }))
        .filter((x): x is { item: StepPlan["batch"][number]; s: SessionState } => x.s?.state === "active");
      if (batch.length === 0) {
        await new Promise<void>((resolve) => {
          this.wakeResolve = resolve;
          // Work that arrived between planning and here must not be missed.
          if (this.scheduler.needsAttention(this.views())) this.wake();
        });
        continue;
      }
      this.counters.lastBatchSize = batch.length;
      // Every sequence in the plan advances; the evaluations land in one batch, in sequence-id order.
      await Promise.all(batch.map(({ item, s }) => (item.kind === "prefill" ? this.prefill(s, item.tokens) : this.step(s))));
    }
  }

  /** State changes the plan asks for before the batch runs. */
  private apply(plan: StepPlan): void {
    for (const id of plan.cancel) this.finish(this.sessions.get(id)!, "cancelled");
    for (const r of plan.resume) this.work.resume(this.sessions.get(r.id)!, r.slot, r.granted);
    for (const id of plan.reenter) {
      const s = this.sessions.get(id)!;
      this.work.reenter(s);
      this.answerBoundary(s);
    }
    if (plan.move !== null) this.work.move(this.sessions.get(plan.move.id)!, plan.move.from, plan.move.to);
  }

  /** Runs `op` with the session out of the batch; errors end the session. */
  private background(s: SessionState, op: () => Promise<void>): void {
    s.transition("busy");
    op()
      .then(() => {
        if (s.state === "busy") s.transition("active");
      })
      .catch((err: unknown) => {
        this.log.error({ err, session: s.id }, "session KV operation failed");
        this.fail(s, err);
      })
      .finally(() => this.wake());
  }

  /** Chunked prefill: a long fill advances one chunk per step, so the sessions decoding beside it keep producing. */
  private async prefill(s: SessionState, n: number): Promise<void> {
    if (s.tokens.feed.length > this.runtime.contextSize - s.seq.nextTokenIndex - 1) {
      this.finish(s, "max_tokens");
      return;
    }
    const head = s.tokens.feed.slice(0, n);
    const c0 = performance.now();
    try {
      await s.seq.evaluateWithoutGeneratingNewTokens(head);
    } catch (err) {
      this.fail(s, err);
      return;
    }
    if (s.timing.decodeSteps > 0) s.timing.prefillMs += performance.now() - c0;
    s.tokens.context.push(...head);
    s.tokens.feed = s.tokens.feed.slice(n);
  }

  /** Evaluates the session's feed and samples one token. */
  private async step(s: SessionState): Promise<void> {
    const feed = s.tokens.feed;
    if (feed.length === 0) {
      this.finish(s, "eos");
      return;
    }
    if (feed.length > this.runtime.contextSize - s.seq.nextTokenIndex - 1) {
      this.finish(s, "max_tokens");
      return;
    }
    const draft = this.drafts.get(s);
    if (draft !== undefined) {
      this.drafts.delete(s);
      await this.validate(s, draft);
      return;
    }
    const t0 = performance.now();
    let result: IteratorResult<Token, void>;
    try {
      if (s.kv.gen === null) {
        const options: SequenceEvaluateOptions = {
          temperature: s.config.temperature,
          ...(s.config.seed !== undefined ? { seed: s.config.seed } : {}),
          tokenBias: () => this.bias(s),
          // Plain temperature sampling over the whole vocabulary unless the request narrows it (OpenAI's defaults: no top-k, top-p 1).
          topK: 0,
          topP: s.config.topP ?? 1,
          grammarEvaluationState: () => s.kv.grammarState ?? s.kv.answerGrammar,
          ...(s.config.penalties !== undefined ? { repeatPenalty: repeatPenalty(s, s.config.penalties) } : {}),
          yieldEogToken: true,
        };
        // Log-probabilities need each step's whole distribution: only completions that ask pay for it.
        s.kv.gen =
          s.logprobs === undefined
            ? s.seq.evaluate(feed, options)
            : withDistributions(s.seq.evaluateWithMetadata(feed, { probabilities: true }, options), (p) => (s.nextDistribution = new TokenDistribution(p, s.config.temperature)));
        result = await s.kv.gen.next();
      } else {
        result = await s.kv.gen.next(feed);
      }
    } catch (err) {
      this.fail(s, err);
      return;
    }
    const stepMs = performance.now() - t0;
    const pureDecode = feed.length === 1 && s.timing.decodeSteps > 0;
    s.tokens.context.push(...feed);
    s.tokens.feed = [];
    if (result.done === true) {
      // The generator stops only on a sampling failure with yieldEogToken on.
      this.finish(s, "eos");
      return;
    }
    // TPOT: steps that evaluated only the previous token (no prefill, no injection).
    if (pureDecode) {
      s.timing.stepMs.push(stepMs);
      s.timing.decodeMs += stepMs;
    } else if (s.timing.decodeSteps > 0) s.timing.prefillMs += stepMs;
    try {
      this.onToken(s, result.value);
    } catch (err) {
      // One session's failure must never take the batch down.
      this.log.error({ err, session: s.id }, "token handling failed");
      this.fail(s, err);
    }
  }

  // ── the per-token path ────────────────────────────────────────────────────

  private onToken(s: SessionState, sampled: Token): void {
    // The distribution this token was sampled from (none for drafted tokens, which are validated, not sampled).
    const distribution = s.nextDistribution;
    s.nextDistribution = undefined;
    s.timing.decodeSteps++;
    s.usage.decodedTokens++;
    this.counters.tokensDecoded++;
    this.decodeRate.record(1);
    const now = performance.now();
    s.timing.firstTokenAt ??= now;
    s.timing.lastTokenAt = now;
    if (s.cancelRequested) {
      this.finish(s, "cancelled");
      return;
    }
    s.tokens.sampled.push(sampled);
    let token = sampled;
    let eos = this.runtime.isEog(sampled);
    if (s.script !== undefined) {
      // The sample is discarded; the script's token is what the sequence sees next.
      const step = s.script.next(s.view);
      eos = step === "eos";
      if (step !== "eos") token = step;
    }
    const forced = s.forced.shift();
    if (forced !== undefined) {
      token = forced;
      eos = false;
    }
    if (eos) {
      // The EOS token is never fed: a resumed sequence continues from before it.
      s.tokens.feed = [];
      // EOS inside a block: the monitor reports it malformed; the turn is over.
      if (s.monitor.inCriticalSection) {
        this.finish(s, "eos");
        return;
      }
      // The grammar admits EOS only once the answer is complete: interrupts it held back may go in now.
      s.kv.answerGrammar = undefined;
      this.decide(s, s.turn.onEos(this.turnView(s)));
      return;
    }
    const wasCritical = s.monitor.inCriticalSection;
    const text = s.detok.push(token);
    const events = s.monitor.push(token, text);
    if (s.logprobs !== undefined && distribution !== undefined) this.recordLogprob(s, token, distribution, wasCritical, events);
    const atToken = s.turn.atToken(this.turnView(s), wasCritical, events);
    if (atToken.length > 0) {
      // The policy ends the turn at this token: it is not fed.
      this.decide(s, atToken);
      return;
    }

    s.tokens.feed = [token];
    s.tokens.generated.push(token);
    s.raw += text;
    s.onRaw?.(text);
    for (const ev of events) this.onMonitorEvent(s, ev);
    if (s.state !== "active") return;
    const head = this.runtime.markerIds[CML.HEAD];
    if (s.monitor.inCriticalSection && head.length === 1 && token === head[0] && !this.drafts.has(s)) this.proposeDraft(s);
    if (s.usage.decodedTokens >= s.config.maxTokens) {
      this.decide(s, s.turn.onMaxTokens(this.turnView(s)));
      return;
    }
    if (this.interrupts.pending(s) > 0) this.decide(s, s.turn.deliver(this.turnView(s)));
  }

  private onMonitorEvent(s: SessionState, ev: MonitorEvent): void {
    switch (ev.type) {
      case "text":
        if (this.text(s, ev.text)) this.decide(s, [{ type: "finish", reason: "eos" }]);
        return;
      case "call_start":
        // A turn that calls answers later: the answer grammar and held-back text end here.
        s.kv.answerGrammar = undefined;
        this.text(s, s.stop?.flush() ?? "");
        if (s.config.grammar) s.kv.grammarState = this.deps.sampling.callGrammarState(callTools(s));
        // A scripted call carries an id (`[CALL] id [HEAD] body`): its body opens at [HEAD].
        if (s.script === undefined) this.proposeDraft(s);
        return;
      case "call_body":
        // The id is taken as the body opens, so a streaming client can name the call before it ends.
        s.openCallId = s.callId(ev.id);
        s.onCallStream?.({ type: "open", id: s.openCallId });
        return;
      case "call_text":
        if (s.openCallId !== undefined) s.onCallStream?.({ type: "text", id: s.openCallId, text: ev.text });
        return;
      case "call": {
        s.kv.grammarState = undefined;
        const id = s.openCallId ?? s.callId(ev.id);
        s.openCallId = undefined;
        s.view.emittedCalls.add(id);
        s.turnCalls++;
        const parsed = parseCallBody(ev.body, s.config.tools);
        if (!parsed.ok) {
          s.onCallStream?.({ type: "refused", id });
          this.refuseCall(s, id, parsed);
          this.answerBoundary(s);
          return;
        }
        s.usage.calls++;
        const call = { id, tool: parsed.tool, arguments: parsed.arguments };
        s.onCallStream?.({ type: "done", id, name: parsed.tool, arguments: parsed.arguments });
        // O3: the result is already cached: append it now; the sequence never leaves the batch.
        const cached = this.deps.speculation?.settledResult(s.id, call);
        if (cached !== undefined) this.appendCached(s, call, cached);
        else this.decide(s, s.turn.onCall(this.turnView(s), call));
        this.answerBoundary(s);
        return;
      }
      case "trap":
        this.decide(s, s.turn.onTrap(this.turnView(s)));
        this.answerBoundary(s);
        return;
      case "malformed":
        s.kv.grammarState = undefined;
        if (!ev.raw.startsWith(CML.CALL)) {
          // A stray [END]/[HEAD], a broken trap, or a model-forged [INTR] block: not a call, nothing to answer.
          this.log.debug({ session: s.id, reason: ev.reason }, "malformed CML ignored");
          return;
        }
        // A call block that cannot be parsed: the model reads why, as for an invalid call.
        s.turnCalls++;
        {
          const id = s.openCallId ?? s.callId(undefined);
          s.openCallId = undefined;
          s.onCallStream?.({ type: "refused", id });
          this.refuseCall(s, id, { code: ErrorCode.MalformedCall, message: `malformed_call: ${ev.reason}` });
        }
        this.answerBoundary(s);
        return;
    }
  }

  /**
   * Text outside blocks reaches the content and the client through the
   * completion's stop sequences; true when one of them ended the text.
   */
  private text(s: SessionState, text: string): boolean {
    const out = s.stop === undefined ? { emit: text, stopped: false } : s.stop.push(text);
    // Before the event: a stream's chunk carries the tokens this text settles.
    s.logprobs?.consume(out.emit, out.stopped);
    if (out.emit !== "") {
      s.content += out.emit;
      s.emit({ type: "text", text: out.emit, t: s.now() });
    }
    return out.stopped;
  }

  /**
   * A content token's log-probability: one that passed text on outside
   * blocks, or that stayed outside without a marker (its text still held).
   * The emitted token's, which a script or a forced opener may have put in
   * place of the sample.
   */
  private recordLogprob(s: SessionState, token: Token, distribution: TokenDistribution, wasCritical: boolean, events: readonly MonitorEvent[]): void {
    const claim = events.reduce((n, ev) => n + (ev.type === "text" ? ev.text.length : 0), 0);
    const outside = !wasCritical && !s.monitor.inCriticalSection && events.length === 0 && !this.runtime.markerTokens.has(token);
    if (claim > 0 || outside) s.logprobs?.add(token, distribution, claim);
  }

  /** Inside a call block no block may open; once a constrained answer has begun, no marker at all. */
  private bias(s: SessionState): TokenBias {
    if (s.kv.grammarState !== undefined) return this.deps.sampling.callBlockBias;
    return s.answering ? this.deps.sampling.answerBias : this.deps.sampling.tokenBias;
  }

  /**
   * A call block, a trap or a delivered interrupt ends what the model wrote
   * before it, so a session's answer starts after it, under a fresh answer
   * grammar. While calls are unanswered (outstanding, held for the turn's end,
   * or their results queued) the grammar takes its awaiting form: another
   * call or a trap, not the answer, which should read their results. The
   * answer, once begun, is a critical section (see `SessionState.answering`):
   * an interrupt arriving then waits for its end and the model answers again
   * after reading it, so no interrupt ever lands inside the JSON and the last
   * answer is the final one.
   */
  private answerBoundary(s: SessionState): void {
    s.answerFrom = s.content.length;
    const format = s.config.answerFormat;
    if (format === undefined || s.config.answerAcrossCalls !== true || s.state === "done") return;
    const awaiting = s.outstanding.size > 0 || s.heldCalls.length > 0 || this.interrupts.pending(s) > 0;
    s.kv.answerGrammar = this.deps.sampling.answerGrammarState(format, { allowCall: s.config.tools.size > 0, awaiting });
  }

  /** O2: a call body opens; propose the session's cached call as a draft for the next step. */
  private proposeDraft(s: SessionState): void {
    const body = this.deps.speculation?.draftBody(s.id);
    if (body === undefined) return;
    const tokens = this.runtime.tokenizeCml(`${body}${CML.END}`);
    if (tokens.length > 0) this.drafts.set(s, tokens);
  }

  /**
   * O2: evaluates the pending token and the draft in one pass and feeds the
   * accepted prefix through the per-token path as if each had been sampled
   * (monitor, events, O3 at the call's end). The last accepted token is the
   * next feed; a draft longer than \`maxDraftTokens\` continues at the next step.
   */
  private async validate(s: SessionState, draft: Token[]): Promise<void> {
    const hook = this.deps.speculation!;
    const pending = s.tokens.feed[0];
    if (pending === undefined || s.tokens.feed.length !== 1) return;
    try {
      const v = await this.work.validateDraft(s, {
        pending,
        draft,
        maxDraftTokens: hook.maxDraftTokens,
        ...(s.script?.peek !== undefined ? { expected: s.script.peek(s.view, Math.min(draft.length, hook.maxDraftTokens)) } : {}),
        temperature: s.config.temperature,
        ...(s.config.seed !== undefined ? { seed: s.config.seed } : {}),
        tokenBias: this.bias(s),
      });
      hook.validated(s.id, v.proposed, v.accepted.length);
      if (v.accepted.length > 0 && s.kv.grammarState !== undefined && !acceptOnGrammar(s.kv.grammarState, v.accepted)) s.kv.grammarState = undefined;
      let fed = pending;
      for (const token of v.accepted) {
        // The previous token is in the KV cache now; this one is the new pending token.
        s.tokens.context.push(fed);
        s.tokens.feed = [];
        this.onToken(s, token);
        fed = token;
        if (s.state !== "active" || s.tokens.feed[0] !== token) break;
      }
      const rest = draft.slice(v.proposed);
      if (v.accepted.length === v.proposed && rest.length > 0 && s.state === "active") this.drafts.set(s, rest);
    } catch (err) {
      this.fail(s, err);
    }
  }

  /** O3: the call's cached result goes in right after its [END], as an injected interrupt. */
  private appendCached(s: SessionState, c: TurnCall, result: { ok: boolean; output: string }): void {
    s.emit({ type: "call", callId: c.id, tool: c.tool, arguments: c.arguments, t: s.now() });
    this.interrupts.enqueue(s, c.id, result.ok ? "tool_result" : "tool_error", result.output);
    this.inject(s);
  }

  private refuseCall(s: SessionState, id: string, failure: CallFailure): void {
    s.emit({ type: "call_error", callId: id, code: failure.code, message: failure.message, t: s.now() });
    this.decide(s, s.turn.onCallError(this.turnView(s), id, failure));
  }

  // ── turn decisions ────────────────────────────────────────────────────────

  /** What the session's turn policy may know now (plain data). */
  private turnView(s: SessionState): TurnView {
    return {
      turnCalls: s.turnCalls,
      held: s.heldCalls.slice(),
      queued: this.interrupts.pending(s),
      outstanding: s.outstanding.size,
      scripted: s.scripted,
      expectsUserInterrupt: s.script?.expectsInterrupt?.(s.view) ?? false,
    };
  }

  /** Applies a policy's decisions in order; a decision after the session ended changes nothing. */
  private decide(s: SessionState, decisions: readonly TurnDecision[]): void {
    for (const d of decisions) {
      if (s.state === "done") return;
      switch (d.type) {
        case "dispatch": {
          const held = s.heldCalls.indexOf(d.call);
          if (held >= 0) s.heldCalls.splice(held, 1);
          this.dispatch(s, d.call);
          break;
        }
        case "hold":
          s.heldCalls.push(d.call);
          break;
        case "error":
          this.interrupts.enqueue(s, d.id, "tool_error", formatCallError(d.failure));
          break;
        case "endTurn":
          s.turnCalls = 0;
          if (d.dropPending) s.tokens.feed = [];
          break;
        case "inject":
          this.inject(s);
          break;
        case "wait":
          s.transition("waiting");
          break;
        case "trap":
          this.work.trap(s);
          break;
        case "finish":
          if (d.finishReason !== undefined) s.finishReason = d.finishReason;
          this.finish(s, d.reason);
          break;
      }
    }
  }

  private dispatch(s: SessionState, c: TurnCall): void {
    const spec = s.config.tools.get(c.tool)!;
    const budget = spec.estimatedLatencyMs !== undefined ? Math.max(DEFAULT_CALL_BUDGET_MS, spec.estimatedLatencyMs * 10) : DEFAULT_CALL_BUDGET_MS;
    const call: ToolCall = { id: c.id, sessionId: s.id, tool: c.tool, arguments: c.arguments, spec, deadline: Date.now() + budget };
    s.outstanding.set(c.id, {
      tool: c.tool,
      startedAt: Date.now(),
      ...(spec.estimatedLatencyMs !== undefined ? { estimatedLatencyMs: spec.estimatedLatencyMs } : {}),
    });
    s.emit({ type: "call", callId: c.id, tool: c.tool, arguments: c.arguments, t: s.now() });
    // Not awaited: the loop keeps decoding while the tool runs.
    let settled: Promise<ToolResult>;
    try {
      settled = this.deps.executor.execute(call, s.abort.signal);
    } catch (err) {
      settled = Promise.reject(err);
    }
    settled
      .catch((err: unknown): ToolResult => ({ callId: c.id, ...errorOutcome(ErrorCode.ToolFailed, err instanceof Error ? err.message : String(err)) }))
      .then((result) => {
        if (s.state === "done" || !s.outstanding.delete(c.id)) return;
        this.interrupts.enqueue(s, c.id, result.ok ? "tool_result" : "tool_error", result.output);
      })
      // Enqueueing a result can fail (formatting, tokenizing): the session fails with the reason, never an unhandled rejection.
      .catch((err: unknown) => this.fail(s, err));
  }

  /** At a token boundary outside any critical section, appends every queued interrupt after the pending token. */
  private inject(s: SessionState): void {
    const { tokens, events } = this.interrupts.injectNow(s);
    if (tokens.length === 0) return;
    s.delivered(events);
    s.tokens.feed.push(...tokens);
    s.usage.injectedTokens += tokens.length;
    this.answerBoundary(s);
  }

  private countPrefill(s: SessionState, n: number): void {
    s.usage.prefilledTokens += n;
    this.counters.tokensPrefilled += n;
  }

  // ── the end ───────────────────────────────────────────────────────────────

  fail(s: SessionState, err: unknown): void {
    if (s.state === "done") return;
    const message = err instanceof Error ? err.message : String(err);
    s.emit({ type: "error", code: ErrorCode.Internal, message, t: s.now() });
    this.finish(s, "error");
  }

  /**
   * Ends a session: final text, then the KV cleanup in the background (the
   * slot stays busy until its cells are cleared or kept as an idle prefix),
   * then `done`.
   */
  finish(s: SessionState, reason: DoneReason): void {
    if (s.state === "done") return;
    s.transition("done");
    this.followers.settle();
    s.tokens.feed = [];
    this.interrupts.drop(s);
    if (reason === "eos" || reason === "max_tokens") {
      const tail = s.detok.flush();
      const events = tail === "" ? [] : s.monitor.push(-1, tail);
      for (const ev of [...events, ...s.monitor.flush()]) {
        if (ev.type === "text") {
          s.raw += ev.text;
          this.text(s, ev.text);
        }
      }
    }
    this.text(s, s.stop?.flush() ?? "");
    s.logprobs?.end();
    if (reason === "cancelled" || reason === "error") s.abort.abort();
    clearTimeout(s.kv.prefetchTimer);
    const paused = s.kv.paused;
    s.kv.paused = undefined;
    // A restartable request's cells stay a valid prefix even when cancelled: its client restarts with the same history.
    const reusable = reason === "eos" || reason === "max_tokens" || (reason === "cancelled" && s.turn.restartable);
    const keepResident = reusable && this.deps.prefixCache && s.config.prefixReuse;
    // Only a turn that ended normally is worth continuing (`previous_response_id`).
    const retainAs = reason === "eos" || reason === "max_tokens" ? s.config.retainAs : undefined;
    this.work
      .release(s, keepResident, paused, retainAs, this.deps.prefixCache && s.config.prefixReuse)
      .catch((err: unknown) => this.log.warn({ err, session: s.id }, "sequence cleanup failed; cleared it"))
      .finally(() => {
        this.live.delete(s);
        this.forgetOldSessions();
        const end = performance.now();
        const { acceptedAt, firstTokenAt, lastTokenAt, stepMs, decodeMs, prefillMs } = s.timing;
        this.log.debug({ session: s.id, reason, usage: s.usage }, "session done");
        s.emit({
          type: "done",
          reason,
          usage: { ...s.usage },
          timings: {
            ttftMs: round3((firstTokenAt ?? end) - acceptedAt),
            tpotMs: round3(median(stepMs)),
            e2eMs: round3((lastTokenAt ?? end) - (firstTokenAt ?? end)),
            totalMs: round3(end - acceptedAt),
            decodeMs: round3(decodeMs),
            prefillMs: round3(prefillMs),
          },
          scripted: s.scripted,
          answer: s.answer,
          t: s.now(),
        });
        this.wake();
      });
  }

  /** Finished sessions stay readable (late event subscribers) up to a bound, oldest dropped first. */
  private forgetOldSessions(): void {
    let excess = this.sessions.size - this.live.size - MAX_DONE_SESSIONS;
    if (excess <= 0) return;
    for (const [id, s] of this.sessions) {
      if (excess <= 0) break;
      if (s.state === "done" && !this.live.has(s)) {
        this.sessions.delete(id);
        excess--;
      }
    }
  }
}

/** Tokens the penalties look back over (llama.cpp's window; OpenAI counts the whole completion). */
const PENALTY_WINDOW = 1024;

/** OpenAI's penalties as llama.cpp's: the count of each generated token, no multiplicative repeat penalty. */
function repeatPenalty(s: SessionState, p: { frequency: number; presence: number }): LlamaContextSequenceRepeatPenalty {
  return { punishTokens: () => s.tokens.generated.slice(-PENALTY_WINDOW), maxPunishTokens: PENALTY_WINDOW, penalty: 1, frequencyPenalty: p.frequency, presencePenalty: p.presence };
}

/** The tools a call block may name: only the chosen one for the first call under a named tool choice. */
function callTools(s: SessionState): ReadonlyMap<string, ToolSpec> {
  const choice = s.config.toolChoice;
  const spec = typeof choice === "object" && s.usage.calls === 0 ? s.config.tools.get(choice.name) : undefined;
  return spec !== undefined ? new Map([[spec.name, spec]]) : s.config.tools;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
