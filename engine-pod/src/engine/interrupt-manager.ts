/**
 * @module The interrupt manager: per-session queues of interrupts (tool
 * results and errors, user and agent messages), deferral while the model is
 * inside a critical section (a call block, or a JSON answer being written),
 * CML formatting and tokenizing (`[INTR] id [HEAD] value [END]`, markers as
 * control tokens, values as plain text that can never forge a marker), and
 * injection accounting (delay in ms and in decode steps, deferred or not, in
 * each `interrupt` event).
 */
import type { Token } from "node-llama-cpp";
import type { CmlMarker, InterruptKind, SessionEvent } from "../../../common/src/index.js";
import type { TokenMonitor } from "../cml/index.js";
import { interruptBlockTokens } from "./runtime.js";

/** What the manager reads of a session (it never writes one). */
export interface InterruptTarget {
  readonly id: string;
  readonly timing: { readonly decodeSteps: number };
  readonly monitor: Pick<TokenMonitor, "safeToInject" | "inCriticalSection">;
  /** A JSON answer (`responseFormat`) is being written: a critical section too, so no interrupt splits the value. */
  readonly answering: boolean;
  /** ms since the session was accepted (event timestamps). */
  now(): number;
}

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

export type InterruptEvent = Extract<SessionEvent, { type: "interrupt" }>;

/** Interrupts taken out of a queue: the tokens to feed, and the events the session records. */
export interface Delivery {
  readonly tokens: readonly Token[];
  readonly events: readonly InterruptEvent[];
}

const NOTHING: Delivery = { tokens: [], events: [] };

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

  enqueue(s: InterruptTarget, id: string, kind: InterruptKind, value: string): void {
    let q = this.queues.get(s.id);
    if (q === undefined) this.queues.set(s.id, (q = []));
    q.push({ id, kind, value, arrivedAt: performance.now(), arrivedStep: s.timing.decodeSteps, deferred: false });
    this.counts.interruptsQueued++;
    this.onQueued();
  }

  /** Interrupts queued for `s` and not yet delivered. */
  pending(s: InterruptTarget): number {
    return this.queues.get(s.id)?.length ?? 0;
  }

  /** Arrival time of the oldest queued interrupt (admission order of paused sessions). */
  oldestArrival(s: InterruptTarget): number | undefined {
    return this.queues.get(s.id)?.[0]?.arrivedAt;
  }

  /**
   * At a token boundary of a live sequence: the tokens of every queued
   * interrupt when injecting is safe (outside any block and any answer being
   * written, no partial marker held back), else none — those caught inside a
   * critical section are counted as deferred once.
   */
  injectNow(s: InterruptTarget): Delivery {
    const q = this.queues.get(s.id);
    if (q === undefined || q.length === 0) return NOTHING;
    if (!s.monitor.safeToInject || s.answering) {
      for (const item of q) {
        if (!item.deferred && (s.monitor.inCriticalSection || s.answering)) {
          item.deferred = true;
          this.counts.interruptsDeferred++;
        }
      }
      return NOTHING;
    }
    return this.take(s, "inject");
  }

  /**
   * Takes every queued interrupt out of the queue: their tokens, and the
   * `interrupt` events for the session to record (the manager never writes
   * the session).
   */
  take(s: InterruptTarget, how: "inject" | "reenter"): Delivery {
    const q = this.queues.get(s.id);
    if (q === undefined) return NOTHING;
    this.queues.delete(s.id);
    const tokens: Token[] = [];
    const events: InterruptEvent[] = [];
    const now = performance.now();
    const ids = this.tokenizer.markerIds;
    for (const item of q) {
      const block = interruptBlockTokens(ids, (t) => this.tokenizer.tokenizeText(t), item.id, item.value);
      tokens.push(...block);
      if (how === "inject") this.counts.interruptsInjected++;
      events.push({
        type: "interrupt",
        id: item.id,
        kind: item.kind,
        value: item.value,
        tokens: block.length,
        delayMs: Math.round((now - item.arrivedAt) * 1000) / 1000,
        delayTokens: s.timing.decodeSteps - item.arrivedStep,
        deferred: item.deferred,
        t: s.now(),
      });
    }
    return { tokens, events };
  }

  /** Forgets a finished session's queue. */
  drop(s: InterruptTarget): void {
    this.queues.delete(s.id);
  }
}
