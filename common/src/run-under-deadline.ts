/**
 * @module Running one tool call under its deadline and a cancellation
 * signal, as the in-process executor and the tool runner both do: the call
 * settles the moment its time runs out or it is cancelled, even when the tool
 * ignores its signal (its late outcome is dropped), and the tool's signal is
 * aborted once the call is over so it can release what it holds.
 */

/** Why a running call was stopped: its time ran out, or someone cancelled it (`why` says who). */
export type StopReason = { kind: "timeout"; ms: number } | { kind: "cancelled"; why: string };

/** The tool's value, the reason it was stopped, or what it threw. Never a rejection. */
export type RunOutcome<T> = { ok: true; value: T } | { ok: false; stopped: StopReason } | { ok: false; error: unknown };

export interface RunUnderDeadlineOptions {
  /** Time the call may take from now, ms (> 0). */
  budgetMs: number;
  /** The caller's cancellation (a session ending, an executor closing). */
  signal?: AbortSignal;
  /** The controller whose signal the tool gets; abort it with a {@link StopReason} to stop the call for a reason of the caller's own. Default: a fresh one. */
  controller?: AbortController;
}

/** Runs `work` until it settles, its budget runs out or it is cancelled, whichever comes first. */
export async function runUnderDeadline<T>(work: (signal: AbortSignal) => Promise<T>, options: RunUnderDeadlineOptions): Promise<RunOutcome<T>> {
  const controller = options.controller ?? new AbortController();
  const { signal } = controller;
  const stop = (reason: StopReason): void => {
    if (!signal.aborted) controller.abort(reason);
  };
  const timer = setTimeout(() => stop({ kind: "timeout", ms: options.budgetMs }), options.budgetMs);
  const onCancel = (): void => stop({ kind: "cancelled", why: "the call was cancelled" });
  if (options.signal?.aborted) onCancel();
  else options.signal?.addEventListener("abort", onCancel, { once: true });
  const stoppedNow = (): RunOutcome<T> => ({ ok: false, stopped: signal.reason as StopReason });
  const stopped = new Promise<RunOutcome<T>>((resolve) => {
    if (signal.aborted) resolve(stoppedNow());
    else signal.addEventListener("abort", () => resolve(stoppedNow()), { once: true });
  });
  const ran = (async (): Promise<RunOutcome<T>> => {
    try {
      return { ok: true, value: await work(signal) };
    } catch (error) {
      return signal.aborted ? stoppedNow() : { ok: false, error };
    }
  })();
  try {
    return await Promise.race([ran, stopped]);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onCancel);
    stop({ kind: "cancelled", why: "finished" });
  }
}
