/**
 * @module The KV work the engine core runs in the background for a session,
 * each step through the KV manager and the scheduler's slots: the fill at
 * admission (a prefix forked from another sequence, the session's own
 * resident prefix, or a cleared sequence), the trap with its slot lending and
 * early restore, the resume, the sync re-entry, the compaction move, and the
 * release of the cells when the session ends (its shared prefix copied into
 * the prefix store first).
 */
import type { Logger } from "../../../common/src/index.js";
import { chooseEviction, estimateTrapCosts, evictable, expectedWaitMs, trapRule, type DraftValidation, type Eviction, type KvManager, type PausedSequence, type RetentionPolicy, type ValidateDraftOptions } from "../kv/index.js";
import { commonPrefix, type Admission, type PrefixStore, type Scheduler } from "../scheduler/index.js";
import type { LlamaContextSequence } from "node-llama-cpp";
import type { InterruptManager } from "./interrupt-manager.js";
import type { Runtime } from "./runtime.js";
import type { SessionState } from "./session-state.js";
import type { DoneReason } from "./turn/index.js";

/** What the KV work needs from the engine core. */
export interface KvWorkHost {
  /** Runs `op` with the session out of the batch (`busy`); errors end the session. */
  background(s: SessionState, op: () => Promise<void>): void;
  inject(s: SessionState): void;
  finish(s: SessionState, reason: DoneReason): void;
  countPrefill(s: SessionState, n: number): void;
}

/** The engine's retention policy under pressure (kv/retention.ts) and the `ttl` policy's default TTL. */
export interface RetentionSettings {
  readonly policy: RetentionPolicy;
  readonly ttlMs: number;
}

/** A sequence handed from a paused session to an admission: free once the paused state has left it. */
export interface Handover {
  readonly slot: number;
  readonly eviction: Eviction;
  readonly ready: Promise<void>;
}

export class KvWork {
  constructor(
    private readonly runtime: Runtime,
    private readonly kv: KvManager,
    private readonly scheduler: Scheduler,
    private readonly interrupts: InterruptManager,
    private readonly log: Logger,
    private readonly host: KvWorkHost,
    private readonly store: PrefixStore,
    private readonly retention: RetentionSettings,
  ) {}

  /** A sequence by id: a session slot, or a prefix-store sequence after them. */
  private sequenceAt(id: number): LlamaContextSequence {
    const seq = id < this.runtime.sequences.length ? this.runtime.sequences[id] : this.runtime.prefixStore[id - this.runtime.sequences.length];
    if (seq === undefined) throw new Error(`no sequence ${id}`);
    return seq;
  }

  /**
   * Prepares an admitted session's sequence: fork a prefix another sequence
   * holds (once `following` resolves with the sequence to copy, when the
   * fork's source was still being filled), reuse its own resident prefix, or
   * clear it.
   */
  fill(s: SessionState, admission: Admission, reuse: boolean, following?: Promise<LlamaContextSequence>, handover?: Promise<void>): void {
    const prompt = s.tokens.prompt;
    this.host.background(s, async () => {
      // A sequence handed over by a paused session is the admission's once that state has left it (cleared below either way).
      if (handover !== undefined) await handover.catch(() => undefined);
      let evaluated = 0;
      if (reuse && admission.fork !== null) {
        // Copy the prefix's cells rather than prefilling them again; a session followed may have moved slots meanwhile.
        const from = following !== undefined ? await following : this.sequenceAt(admission.fork.from);
        const r = await this.kv.fork(s.seq, from, admission.fork.tokens);
        evaluated = r.evaluatedTokens;
        if (evaluated > 0) this.host.countPrefill(s, evaluated);
      }
      if (reuse && (admission.fork !== null || admission.reusePrefix > 0)) {
        // Whatever the sequence holds now, keep only what matches the prompt (the fork's source may have changed meanwhile).
        const r = await this.kv.reusePrefix(s.seq, prompt);
        s.reusedPrefixTokens = Math.max(0, r.reusedTokens - evaluated);
        s.tokens.context = prompt.slice(0, r.reusedTokens);
        s.tokens.feed = r.suffix;
      } else {
        await this.kv.clear(s.seq);
        s.tokens.context = [];
        s.tokens.feed = prompt.slice();
      }
      this.host.countPrefill(s, s.tokens.feed.length);
    });
  }

  /** Pauses the session until its next interrupt; the KV manager decides keep / swap / recompute, once. */
  trap(s: SessionState): void {
    s.usage.traps++;
    const wait = this.expectedWait(s, Date.now());
    const pressure = this.scheduler.busy / this.scheduler.size;
    const contextTokens = s.seq.nextTokenIndex;
    s.kv.pausedAt = Date.now();
    s.transition("trapped");
    // The session's own decision, else the pool's, else what the retention policy does at a trap.
    const override = s.config.kvPolicy !== "auto" ? s.config.kvPolicy : this.kv.policy !== "auto" ? this.kv.policy : trapRule(this.retention.policy);
    this.host.background(s, async () => {
      const outcome = await this.kv.trap({
        sequence: s.seq,
        expectedWaitMs: wait,
        kvPressure: pressure,
        override,
        // The KV manager requires no live generator on a sequence whose cells leave it.
        release: () => this.closeGenerator(s),
      });
      s.kv.trapDecision = outcome.verdict.decision;
      s.emit({ type: "trap", decision: outcome.verdict.decision, expectedWaitMs: Number.isFinite(wait) ? Math.round(wait) : -1, contextTokens, t: s.now() });
      s.kv.paused = outcome.paused;
      s.kv.trapPauseMs = outcome.pauseMs;
      if (outcome.paused.decision !== "keep") {
        // The state lives outside the context now: lend the slot to other sessions until resume.
        this.scheduler.release(s.slot);
        s.slot = -1;
        this.schedulePrefetch(s, wait - outcome.pauseMs - outcome.verdict.restoreLeadMs);
      }
      s.transition("trapped");
    });
  }

  /** Expected time until the session's next interrupt: its pending calls' estimates, the request's hint where a tool gives none. */
  private expectedWait(s: SessionState, now: number): number {
    const pending = [...s.outstanding.values()].map((c) => ({ startedAt: c.startedAt, ...(c.estimatedLatencyMs !== undefined ? { estimatedLatencyMs: c.estimatedLatencyMs } : {}) }));
    return expectedWaitMs(pending, now, s.config.retention?.expectedToolMs);
  }

  /** Sequences paused sessions hold that the policy would give a request now (heartbeats add them to the free ones). */
  reclaimable(sessions: Iterable<SessionState>, queued: (s: SessionState) => number): number {
    const now = Date.now();
    return evictable(this.retention.policy, this.candidates(sessions, Infinity, queued, now).candidates, now, { ttlMs: this.retention.ttlMs }).length;
  }

  /** Sessions paused with their cells kept, no interrupt waiting and priority no higher than `priority`, as the retention policy sees them. */
  private candidates(sessions: Iterable<SessionState>, priority: number, queued: (s: SessionState) => number, now: number) {
    const held = [...sessions].filter((s) => s.state === "trapped" && s.slot >= 0 && s.kv.paused?.decision === "keep" && queued(s) === 0 && s.config.priority <= priority);
    const candidates = held.map((s) => {
      const costs = estimateTrapCosts(this.kv.costModel, s.seq.nextTokenIndex);
      return {
        id: s.id,
        pausedAt: s.kv.pausedAt ?? now,
        expectedWaitMs: this.expectedWait(s, now),
        swapMs: costs.swapMs,
        recomputeMs: costs.recomputeMs,
        ...(s.config.retention?.retentionMs !== undefined ? { retentionMs: s.config.retention.retentionMs } : {}),
      };
    });
    return { held, candidates };
  }

  /** Restore ahead of the expected interrupt, so the restore adds no latency (AsyncLM §5.4). */
  private schedulePrefetch(s: SessionState, leadMs: number): void {
    if (!Number.isFinite(leadMs)) return;
    s.kv.prefetchTimer = setTimeout(() => this.prefetch(s), Math.max(0, leadMs));
    s.kv.prefetchTimer.unref();
  }

  /**
   * Retention under pressure: a request finds every sequence held. Among the
   * sessions paused with their cells kept (no interrupt waiting, priority no
   * higher than the request's), the policy picks one to give them up; its
   * slot is the admission's at once, and `ready` resolves when its state has
   * left the sequence. Null: none is picked (the request is refused).
   */
  handOver(sessions: Iterable<SessionState>, priority: number, queued: (s: SessionState) => number): Handover | null {
    const now = Date.now();
    const { held, candidates } = this.candidates(sessions, priority, queued, now);
    const eviction = chooseEviction(this.retention.policy, candidates, now, { ttlMs: this.retention.ttlMs });
    if (eviction === null) return null;
    const s = held.find((x) => x.id === eviction.id)!;
    const slot = s.slot;
    const paused = s.kv.paused!;
    const wait = candidates.find((c) => c.id === s.id)!.expectedWaitMs;
    // The slot is the admission's from now on; the paused session resumes into whichever slot it is granted.
    s.slot = -1;
    const ready = new Promise<void>((resolve, reject) => {
      this.host.background(s, async () => {
        try {
          const next = await this.kv.evict(paused, eviction.decision, () => this.closeGenerator(s));
          s.kv.paused = next;
          s.kv.trapDecision = next.decision;
          s.kv.trapPauseMs = (s.kv.trapPauseMs ?? 0) + next.pauseMs;
          this.log.debug({ session: s.id, decision: next.decision, reason: eviction.reason, contextTokens: next.contextTokens, expectedWaitMs: wait }, "paused session gave its cells to a waiting request");
          const restore = estimateTrapCosts(this.kv.costModel, next.contextTokens);
          this.schedulePrefetch(s, wait - (Date.now() - now) - (next.decision === "swap" ? restore.swapInMs : restore.recomputeMs));
          s.transition("trapped");
          resolve();
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
          throw err;
        }
      });
    });
    return { slot, eviction, ready };
  }

  /** The expected interrupt is near: take a slot and restore the paused state now, still trapped. */
  private prefetch(s: SessionState): void {
    s.kv.prefetchTimer = undefined;
    const paused = s.kv.paused;
    if (s.state !== "trapped" || paused === undefined || s.slot >= 0 || this.interrupts.pending(s) > 0) return;
    const slot = this.scheduler.acquire();
    if (slot === null) return; // the interrupt path restores it once a slot frees
    this.assign(s, slot);
    this.host.background(s, async () => {
      const r = await this.kv.resume(paused, s.seq);
      s.kv.paused = undefined;
      s.kv.trapPauseMs = (s.kv.trapPauseMs ?? 0) + r.resumeMs;
      if (r.evaluatedTokens > 0) this.host.countPrefill(s, r.evaluatedTokens);
      s.transition("trapped");
    });
  }

  /** A trapped session's interrupt arrived: restore its KV state (into `slot`, granted if it lent its own), then inject. */
  resume(s: SessionState, slot: number, granted: boolean): void {
    clearTimeout(s.kv.prefetchTimer);
    s.kv.prefetchTimer = undefined;
    if (granted) this.assign(s, slot);
    const paused = s.kv.paused;
    this.host.background(s, async () => {
      let costMs = s.kv.trapPauseMs ?? 0;
      if (paused !== undefined) {
        // Into whichever sequence the session holds now (a cleared one, possibly not the original).
        const r = await this.kv.resume(paused, s.seq);
        costMs += r.resumeMs;
        if (r.evaluatedTokens > 0) this.host.countPrefill(s, r.evaluatedTokens);
      }
      s.kv.paused = undefined;
      s.kv.trapPauseMs = undefined;
      s.emit({ type: "resume", decision: s.kv.trapDecision ?? "keep", costMs: Math.round(costMs * 1000) / 1000, t: s.now() });
      s.transition("active");
      this.host.inject(s);
    });
  }

  /**
   * Sync modes: the turn's results are in. Re-enter as a NEW request whose
   * tokens are the whole history plus the results: with prefix reuse only the
   * tokens past the resident prefix are evaluated; without, the sequence is
   * erased and everything is prefilled again.
   */
  reenter(s: SessionState): void {
    const delivery = this.interrupts.take(s, "reenter");
    s.delivered(delivery.events);
    const full = [...s.tokens.context, ...s.tokens.feed, ...delivery.tokens];
    this.host.background(s, async () => {
      await this.closeGenerator(s);
      if (s.config.prefixReuse) {
        const r = await this.kv.reusePrefix(s.seq, full);
        s.tokens.context = full.slice(0, r.reusedTokens);
        s.tokens.feed = r.suffix;
      } else {
        await this.kv.clear(s.seq);
        s.tokens.context = [];
        s.tokens.feed = full;
      }
      this.host.countPrefill(s, s.tokens.feed.length);
      if (s.usage.decodedTokens >= s.config.maxTokens) this.host.finish(s, "max_tokens");
    });
  }

  /** Compaction: the session moves down into a lower sequence id so busy ids stay contiguous. */
  move(s: SessionState, from: number, to: number): void {
    const source = s.seq;
    const target = this.runtime.sequences[to]!;
    this.host.background(s, async () => {
      await this.closeGenerator(s);
      let r: { ms: number; tokens: number };
      try {
        r = await this.kv.move(source, target);
      } catch (err) {
        this.scheduler.release(to);
        throw err;
      }
      this.assign(s, to);
      this.scheduler.release(from);
      this.log.debug({ session: s.id, from, to, tokens: r.tokens, ms: r.ms }, "sequence compacted");
    });
  }

  private assign(s: SessionState, slot: number): void {
    s.slot = slot;
    s.seq = this.runtime.sequences[slot]!;
  }

  /** O2: the validation pass of a drafted call on the session's sequence (its generator closed first: the pass evaluates and erases cells). */
  async validateDraft(s: SessionState, options: ValidateDraftOptions): Promise<DraftValidation> {
    await this.closeGenerator(s);
    return this.kv.validateDraft(s.seq, options);
  }

  async closeGenerator(s: SessionState): Promise<void> {
    const gen = s.kv.gen;
    s.kv.gen = null;
    await gen?.return();
  }

  /**
   * A finished session's cells: its shared prefix copied into the prefix
   * store (`storePrefix`, when the store lacks it), then kept resident as an
   * idle prefix-cache entry (`keepResident`; retained under `retainAs` when
   * given), or cleared; its paused state, if any, discarded. The slot is
   * released either way.
   */
  async release(s: SessionState, keepResident: boolean, paused: PausedSequence | undefined, retainAs?: string, storePrefix = false): Promise<void> {
    try {
      await this.closeGenerator(s);
      if (paused !== undefined) await this.kv.discard(paused);
      if (s.slot < 0) {
        // A paused session that lent its slot holds no cells: nothing to store or keep.
        if (storePrefix) this.log.debug({ session: s.id }, "prefix store: the session ended without cells; nothing offered");
        return;
      }
      if (storePrefix) await this.storePrefix(s);
      if (keepResident && s.seq.nextTokenIndex > 0) this.scheduler.release(s.slot, s.seq.contextTokens, retainAs);
      else {
        await this.kv.clear(s.seq);
        this.scheduler.release(s.slot);
      }
    } catch (err) {
      if (s.slot >= 0) {
        await this.kv.clear(s.seq).catch(() => undefined);
        this.scheduler.release(s.slot);
      }
      throw err;
    }
  }

  /** Copies the session's shared prefix into the prefix store, when its cells hold it and the store does not yet. */
  private async storePrefix(s: SessionState): Promise<void> {
    const prefix = s.sharedPrefix;
    if (prefix === undefined) return;
    const held = commonPrefix(s.seq.contextTokens, prefix.tokens);
    if (held < prefix.tokens.length) {
      this.log.debug({ session: s.id, app: prefix.hashes[0], held, tokens: prefix.tokens.length }, "prefix store: the session's cells no longer hold its shared prefix; nothing offered");
      return;
    }
    const target = this.store.offer(prefix);
    if (target === null) return;
    const replaced = this.store.held().find((e) => e.sequence === target)?.hashes[0];
    if (await this.kv.copyPrefix(this.sequenceAt(target), s.seq, prefix.tokens.length)) {
      this.store.stored(target, prefix);
      this.log.debug({ session: s.id, app: prefix.hashes[0], role: prefix.role ?? "home", sequence: target, replaced }, "prefix store: stored");
    } else {
      this.store.emptied(target);
      this.log.debug({ session: s.id, tokens: prefix.tokens.length }, "prefix store copy failed; the entry is empty");
    }
  }
}
