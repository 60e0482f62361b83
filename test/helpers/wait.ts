/**
 * @module Polling for the tests (no fixed sleeps): `waitFor` when the test
 * cannot go on without the condition (it throws, naming what it waited for),
 * `eventually` when the test asserts on whether it held.
 */

/**
 * Polls `check` until it returns a value other than undefined, null or
 * false, and returns that value; past `timeoutMs` it throws, naming `what`
 * and the last error `check` threw. Polls every 20 ms, backing off to 250.
 */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 60_000): Promise<Exclude<T, undefined | null | false>> {
  const deadline = Date.now() + timeoutMs;
  let delay = 20;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== null && v !== false) return v as Exclude<T, undefined | null | false>;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ""}`);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(250, delay * 2);
  }
}

/** Polls `check` every 20 ms until it holds or `ms` pass; returns whether it held (checked once more at the end). */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}
