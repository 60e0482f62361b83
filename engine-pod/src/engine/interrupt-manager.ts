/**
 * @module The interrupt manager: per-session queues of interrupts (tool
 * results and errors, user and agent messages), deferral while the model is
 * inside a critical section (a call block), CML formatting and tokenizing
 * (`[INTR] id [HEAD] value [END]`, markers as control tokens, values as plain
 * text that can never forge a marker), and injection accounting (delay in ms
 * and in decode steps, deferred or not, in each `interrupt` event).
 */
import type { Token } from "node-llama-cpp";
import type { CmlMarker, InterruptKind } from "../../../common/src/index.js";
import { interruptBlockTokens } from "./runtime.js";
import type { SessionState } from "./session-state.js";

/** A queued interrupt. */
interface QueuedInterrupt {
  id: string;
  kind: InterruptKind;
  value: string;
  /** performance.now() at arrival. */
  arrivedAt: number;
  /** The session's decode step count at arrival. */
  arrivedStep: number;
  /** Held back at least once by a critical section. */
  deferred: boolean;
}

/** The tokenizer side the manager needs (from the runtime). */
export interface InterruptTokenizer {
  readonly markerIds: Readonly<Record<CmlMarker, readonly Token[]>>;
  tokenizeText(text: string): Token[];
}

export interface InterruptCounters {
  interruptsQueued: number;
  interruptsInjected: number;
  /** Interrupts that had to wait for a critical section (call block) to end. */
  interruptsDeferred: number;
}

export class InterruptManager {
  private readonly queues = new Map<string, QueuedInterrupt[]>();
  private readonly counts: InterruptCounters = { interruptsQueued: 0, interruptsInjected: 0, interruptsDeferred: 0 };

  /** `onQueued` wakes the decode loop. */
  constructor(
    private readonly tokenizer: InterruptTokenizer,
    private readonly onQueued: () => void,
  ) {}

  get counters(): Readonly<InterruptCounters> {
    return this.counts;
  }

  enqueue(s: SessionState, id: string, kind: InterruptKind, value: string): void {
    let q = this.queues.get(s.id);
    if (q === undefined) this.queues.set(s.id, (q = []));
    q.push({ id, kind, value, arrivedAt: performance.now(), arrivedStep: s.timing.decodeSteps, deferred: false });
    this.counts.interruptsQueued++;
    this.onQueued();
  }

  /** Interrupts queued for `s` and not yet delivered. */
  pending(s: SessionState): number {
    return this.queues.get(s.id)?.length ?? 0;
  }

  /** Arrival time of the oldest queued interrupt (admission order of paused sessions). */
  oldestArrival(s: SessionState): number | undefined {
    return this.queues.get(s.id)?.[0]?.arrivedAt;
  }

  /**
   * At a token boundary of a live sequence: the tokens of every queued
   * interrupt when injecting is safe (outside any block, no partial marker
   * held back), else none — those caught inside a critical section are
   * counted as deferred once.
   */
  injectNow(s: SessionState): Token[] {
    const q = this.queues.get(s.id);
    if (q === undefined || q.length === 0) return [];
    if (!s.monitor.safeToInject) {
      for (const item of q) {
        if (!item.deferred && s.monitor.inCriticalSection) {
          item.deferred = true;
          this.counts.interruptsDeferred++;
        }
      }
      return [];
    }
    return this.take(s, "inject");
  }

  /** Formats and tokenizes every queued interrupt and emits the `interrupt` events. */
  take(s: SessionState, how: "inject" | "reenter"): Token[] {
    const q = this.queues.get(s.id);
    if (q === undefined) return [];
    this.queues.delete(s.id);
    const out: Token[] = [];
    const now = performance.now();
    const ids = this.tokenizer.markerIds;
    for (const item of q) {
      const tokens = interruptBlockTokens(ids, (t) => this.tokenizer.tokenizeText(t), item.id, item.value);
      out.push(...tokens);
      s.view.injected.add(item.id);
      s.usage.interrupts++;
      if (how === "inject") this.counts.interruptsInjected++;
      s.emit({
        type: "interrupt",
        id: item.id,
        kind: item.kind,
        value: item.value,
        tokens: tokens.length,
        delayMs: Math.round((now - item.arrivedAt) * 1000) / 1000,
        delayTokens: s.timing.decodeSteps - item.arrivedStep,
        deferred: item.deferred,
        t: s.now(),
      });
    }
    return out;
  }

  /** Forgets a finished session's queue. */
  drop(s: SessionState): void {
    this.queues.delete(s.id);
  }
}
