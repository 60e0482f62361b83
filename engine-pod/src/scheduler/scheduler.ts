/**
 * @module The scheduler: owns the sequence slots and decides, once per step,
 * what runs. It reads plain data about the sessions ({@link SessionView}) and
 * returns plain, read-only data ({@link StepPlan}): which sessions are
 * cancelled, resumed into which slot, re-entered, moved down (compaction), and
 * which sequences evaluate in this step's batch — decode steps and prefill
 * chunks under the per-session token budget, in sequence-id order, within a
 * latency-critical session's batch cap ({@link capBatch}). Admission
 * of new requests (prefix-cache slot, or a prefix to fork from another
 * sequence) and slot lending are decided here too. No class instance crosses
 * its boundary in either direction.
 */
import type { Token } from "node-llama-cpp";
import { capBatch } from "./batch-cap.js";
import type { SessionView } from "./session-view.js";
import { commonPrefix, SlotAllocator, type Retention } from "./slot-allocator.js";

/** One sequence's work in a step. */
export interface BatchItem {
  readonly id: string;
  readonly slot: number;
  /** `prefill`: evaluate `tokens` of the fill without sampling; `decode`: evaluate them and sample one token. */
  readonly kind: "prefill" | "decode";
  readonly tokens: number;
}

/** What to do before and in one step. */
export interface StepPlan {
  readonly cancel: readonly string[];
  /** Trapped sessions whose interrupt arrived, with the slot they resume into (their own, or a new grant). */
  readonly resume: readonly { readonly id: string; readonly slot: number; readonly granted: boolean }[];
  /** Sync sessions whose turn results are all in. */
  readonly reenter: readonly string[];
  /** A compaction move (the target slot is already claimed). */
  readonly move: { readonly id: string; readonly from: number; readonly to: number } | null;
  /** Sequences evaluated in this step, in sequence-id order. */
  readonly batch: readonly BatchItem[];
}

/** Where a new request goes. */
export interface Admission {
  readonly slot: number;
  /** Tokens of the slot's own resident state that match the prompt (kept in place). */
  readonly reusePrefix: number;
  /**
   * A longer prefix in another sequence, to copy instead of prefilling. With
   * `filling`, that sequence's session is still prefilling its prompt: the
   * copy waits until the shared tokens are in its cells.
   */
  readonly fork: { readonly from: number; readonly tokens: number; readonly filling: boolean } | null;
}

/** What prefix reuse may draw on at admission. */
export interface ReuseInputs {
  /** The tokens each sequence holds (index = sequence id). */
  readonly resident: readonly (readonly Token[])[];
  /** The prompt of the live session still prefilling each sequence, if any (index = sequence id). */
  readonly filling?: readonly (readonly Token[] | undefined)[];
  /** The retained slot this request continues. */
  readonly continues?: string;
}

export interface SchedulerOptions {
  sequences: number;
  /** Most tokens of one session's fill evaluated per step (0: no limit). */
  prefillChunk: number;
  /** Plan compaction moves (default true). */
  compaction: boolean;
  /** Decode steps a session must still have ahead to be worth moving. */
  compactionMinRemaining?: number;
  /** Fork a resident prefix only when it saves at least this many tokens of prefill. */
  minForkTokens?: number;
  /** Finished sequences retained under a key (Responses API `previous_response_id`); default off. */
  retention?: Retention;
}

export class Scheduler {
  private readonly slots: SlotAllocator;

  constructor(private readonly options: SchedulerOptions) {
    this.slots = new SlotAllocator(options.sequences, options.retention);
  }

  get size(): number {
    return this.slots.size;
  }

  /** Slots held by live sessions. */
  get busy(): number {
    return this.slots.busy;
  }

  /** Slots a request could get now (free, or idle prefix cache). */
  get available(): number {
    return this.slots.available;
  }

  /**
   * A slot for a new request, or null when none may be given: every slot is
   * busy, or a paused session of at least the same priority waits for one
   * (its interrupt arrived while its slot was lent out).
   * With `reuse`, the idle slot sharing the longest prefix wins, and a longer
   * prefix in another sequence is forked from: one resident now, or one a
   * live session is still prefilling. Waiting for that fill costs less than
   * prefilling the same tokens beside it in the same batches: one engine
   * thread evaluates both either way.
   */
  admit(prompt: readonly Token[], priority: number, waiting: readonly SessionView[], reuse?: ReuseInputs): Admission | null {
    // Paused sessions whose results are in come first: they resume into the next free slot.
    if (waiting.some((v) => resumable(v) && v.slot < 0 && v.priority >= priority)) return null;
    const grant = this.slots.acquire(reuse !== undefined ? prompt : [], 1, reuse?.continues);
    if (grant === null) return null;
    return { slot: grant.slot, reusePrefix: grant.reusePrefix, fork: reuse !== undefined ? this.bestFork(prompt, grant.slot, grant.reusePrefix, reuse) : null };
  }

  /**
   * Where a request goes into a sequence a paused session hands over
   * (retention under pressure): the slot stays held, its cells are the paused
   * session's until they leave, so nothing of its own is reused; a prefix in
   * another sequence is still forked.
   */
  handedOver(slot: number, prompt: readonly Token[], reuse?: ReuseInputs): Admission {
    return { slot, reusePrefix: 0, fork: reuse !== undefined ? this.bestFork(prompt, slot, 0, reuse) : null };
  }

  /** The longest prefix of `prompt` another sequence holds (or is filling), worth copying into `slot` over the `own` tokens it keeps. */
  private bestFork(prompt: readonly Token[], slot: number, own: number, reuse: ReuseInputs): Admission["fork"] {
    let fork: Admission["fork"] = null;
    // Keep at least one prompt token to evaluate: its logits are sampled from.
    const limit = prompt.length - 1;
    const min = this.options.minForkTokens ?? 16;
    const consider = (from: number, tokens: readonly Token[] | undefined, filling: boolean): void => {
      if (from === slot || tokens === undefined) return;
      const n = Math.min(commonPrefix(tokens, prompt), limit);
      // Waiting for a fill is worth it only when it saves `min` tokens over the best prefix resident now.
      const floor = filling ? Math.max(own, fork?.tokens ?? 0) : own;
      if (n >= floor + min && n > (fork?.tokens ?? 0)) fork = { from, tokens: n, filling };
    };
    reuse.resident.forEach((tokens, i) => consider(i, tokens, false));
    reuse.filling?.forEach((tokens, i) => consider(i, tokens, true));
    return fork;
  }

  /** A slot for a paused session's early restore (prefetch), or null. */
  acquire(): number | null {
    return this.slots.acquire()?.slot ?? null;
  }

  /** Returns a slot: idle with `resident` tokens (prefix cache; retained under `retainAs`), else free. Also how a paused session lends its slot out. */
  release(slot: number, resident?: readonly Token[], retainAs?: string): void {
    this.slots.release(slot, resident, retainAs);
  }

  /** Resident tokens retained under `key`, or undefined (never retained, expired or evicted). */
  retained(key: string): readonly Token[] | undefined {
    return this.slots.retainedTokens(key);
  }

  /** Sequences retained under a key now. */
  get retainedCount(): number {
    return this.slots.retainedCount;
  }

  /** Plans one step from the sessions' views (in admission order). */
  plan(views: readonly SessionView[]): StepPlan {
    const cancel: string[] = [];
    const resume: { id: string; slot: number; granted: boolean }[] = [];
    const reenter: string[] = [];
    const settled = new Set<string>();
    const candidates: SessionView[] = [];
    for (const v of views) {
      if (v.state === "busy" || v.state === "done") continue;
      if (v.cancelRequested) {
        cancel.push(v.id);
        settled.add(v.id);
      } else if (resumable(v)) candidates.push(v);
      else if (v.state === "waiting" && v.outstanding === 0 && v.queued > 0) {
        reenter.push(v.id);
        settled.add(v.id);
      }
    }
    // Higher priority first; among equals, admission order (the sort is stable).
    candidates.sort((a, b) => b.priority - a.priority);
    for (const v of candidates) {
      if (v.slot >= 0) resume.push({ id: v.id, slot: v.slot, granted: false });
      else {
        const grant = this.slots.acquire();
        if (grant === null) continue; // retried when a slot is released
        resume.push({ id: v.id, slot: grant.slot, granted: true });
      }
      settled.add(v.id);
    }
    const move = this.planMove(views, settled);
    const chunk = this.options.prefillChunk;
    const batch: BatchItem[] = capBatch(views.filter((v) => v.state === "active" && !settled.has(v.id) && v.id !== move?.id))
      .sort((a, b) => a.slot - b.slot)
      .map((v) =>
        chunk > 0 && v.feed > chunk
          ? { id: v.id, slot: v.slot, kind: "prefill" as const, tokens: chunk }
          : { id: v.id, slot: v.slot, kind: "decode" as const, tokens: v.feed },
      );
    return { cancel, resume, reenter, move, batch };
  }

  /** Whether any session needs the loop although none is active (an interrupt, a cancel, a re-entry). */
  needsAttention(views: readonly SessionView[]): boolean {
    for (const v of views) {
      if (v.state === "active") return true;
      if (v.cancelRequested && v.state !== "busy" && v.state !== "done") return true;
      if (resumable(v) && (v.slot >= 0 || this.slots.available > 0)) return true;
      if (v.state === "waiting" && v.outstanding === 0 && v.queued > 0) return true;
    }
    return false;
  }

  /** Paused sessions whose interrupt arrived but that have no slot to resume into. */
  queued(views: readonly SessionView[]): number {
    return views.filter((v) => resumable(v) && v.slot < 0).length;
  }

  /**
   * Keeps busy sequence ids contiguous: llama.cpp splits a batch at every gap
   * between ids. When a slot below the highest busy one is free, the session
   * on the highest one moves down (claimed here; released by the engine if
   * the move fails).
   */
  private planMove(views: readonly SessionView[], settled: ReadonlySet<string>): StepPlan["move"] {
    if (!this.options.compaction) return null;
    const gap = this.slots.gap();
    if (gap === null) return null;
    const v = views.find((x) => x.slot === gap.from && x.state !== "done");
    // Only between steps, and only a session with a worthwhile remainder ahead.
    const remaining = this.options.compactionMinRemaining ?? 16;
    if (v === undefined || v.state !== "active" || settled.has(v.id) || v.decodedTokens + remaining > v.maxTokens) return null;
    this.slots.claim(gap.to);
    return { id: v.id, from: gap.from, to: gap.to };
  }
}

/** A trapped session whose interrupt arrived. */
function resumable(v: SessionView): boolean {
  return v.state === "trapped" && v.queued > 0;
}
