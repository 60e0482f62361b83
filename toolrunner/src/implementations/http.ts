/**
 * @module The `http` implementation: POSTs the arguments as JSON to a URL and
 * returns the response body. Status >= 400 is a failure that names the
 * status. Tools marked idempotent are retried with exponential backoff on
 * 5xx, 429 and network errors; others are never retried (a repeated POST
 * could act twice).
 */
import { abortableDelay } from "../../../common/src/builtin-tools/index.js";
import { ToolFailure, type ToolImpl, type ToolRunContext } from "./tool-impl.js";

export interface HttpImplOptions {
  url: string;
  method?: "POST" | "PUT";
  headers?: Record<string, string>;
  /** Extra attempts for idempotent tools. */
  retries: number;
  /** First backoff, ms (doubles each retry, with jitter). */
  backoffMs?: number;
}

function excerpt(text: string, max = 300): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > max ? `${oneLine.slice(0, max)}…` : oneLine;
}

export function createHttpImpl(options: HttpImplOptions): ToolImpl {
  const backoffMs = options.backoffMs ?? 100;
  const once = async (args: Record<string, unknown>, ctx: ToolRunContext): Promise<{ output: string } | { error: ToolFailure; retryable: boolean }> => {
    let res: Response;
    try {
      res = await fetch(options.url, {
        method: options.method ?? "POST",
        headers: {
          "content-type": "application/json",
          "interlace-call-id": ctx.callId,
          "interlace-session-id": ctx.sessionId,
          "idempotency-key": ctx.idempotencyKey,
          ...options.headers,
        },
        body: JSON.stringify(args),
        signal: ctx.signal,
      });
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return { error: new ToolFailure(`request to ${options.url} failed: ${cause?.code ?? cause?.message ?? (err as Error).message}`), retryable: true };
    }
    const text = await res.text();
    if (res.ok) return { output: text };
    return {
      error: new ToolFailure(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""} from ${options.url}${text ? `: ${excerpt(text)}` : ""}`),
      retryable: res.status >= 500 || res.status === 429,
    };
  };
  return {
    async run(args, ctx) {
      const attempts = ctx.idempotent ? options.retries + 1 : 1;
      let last: ToolFailure | undefined;
      for (let i = 0; i < attempts; i++) {
        const r = await once(args, ctx);
        if ("output" in r) return r.output;
        last = r.error;
        if (!r.retryable) break;
        if (i + 1 < attempts) await abortableDelay(backoffMs * 2 ** i * (0.5 + Math.random()), ctx.signal);
      }
      const suffix = ctx.idempotent ? (attempts > 1 ? ` (after ${attempts} attempts)` : "") : " (not retried: the tool is not idempotent)";
      throw new ToolFailure(`${last?.message ?? "request failed"}${suffix}`);
    },
  };
}
