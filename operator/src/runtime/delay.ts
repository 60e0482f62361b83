/**
 * @module Waiting that can be cut short: every loop in the runtime sleeps
 * through this so that shutdown never waits out a backoff.
 */

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
