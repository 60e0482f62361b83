/**
 * @module The executor's table of calls in flight, keyed by session and call
 * id, plus a bounded memory of recently finished calls so a second result for
 * a finished call is told apart (duplicate) from one nobody asked for.
 */

/** How a finished call ended, for classifying late messages. */
export type Finish = "result" | "timeout" | "cancelled" | "failed";

export function callKey(sessionId: string, callId: string): string {
  return `${sessionId}\u0000${callId}`;
}

export class FinishedCalls {
  private readonly finished = new Map<string, Finish>();

  constructor(private readonly capacity = 50_000) {}

  add(key: string, how: Finish): void {
    this.finished.set(key, how);
    // Maps iterate in insertion order: the first key is the oldest.
    if (this.finished.size > this.capacity) {
      const oldest = this.finished.keys().next().value;
      if (oldest !== undefined) this.finished.delete(oldest);
    }
  }

  get(key: string): Finish | undefined {
    return this.finished.get(key);
  }
}
