/**
 * @module The tool-cache API (the speculative-tool-calls paper's
 * `cache-tool-output`): `POST /cache-tool-output/{response_id}` and the same
 * under the session API, `POST /v1/sessions/{id}/cache-tool-output`. A client
 * that already has tool outputs (its own speculation, Algorithm 4) posts them;
 * the engine serves the session's matching calls from them. A response id is
 * a session id. Body: a JSON array of `{name, params?, output, keep_alive?}`
 * (`params` canonicalized as the cache key; without it the output answers
 * any call of the tool; `output` any JSON, strings kept as they are;
 * `keep_alive` seconds). Answers `200 {"cached": n}`; 404 for an unknown id,
 * 409 for a finished session, 400 for a malformed entry, 413 for an output
 * over `--max-cached-output-bytes`.
 */
import type { Express, Request, RequestHandler, Response } from "express";
import { ErrorCode } from "../../../common/src/index.js";
import { MAX_CACHE_TOOL_OUTPUT_ENTRIES, validateCacheToolOutputEntry } from "../../../common/src/wire/index.js";
import type { Engine } from "../engine/index.js";
import type { ToolCache } from "../speculation/index.js";
import { HttpError, SESSION_FINISHED } from "./http-errors.js";

export interface CacheToolOutputContext {
  engine: () => Engine;
  cache: ToolCache;
  /** Largest single output, bytes (→ 413). */
  maxOutputBytes: number;
  /** Longest `keep_alive`, ms (the cache's TTL). */
  maxTtlMs: number;
}

/** One validated entry. */
export interface CacheToolOutputEntry {
  name: string;
  params?: Record<string, unknown>;
  output: string;
  ttlMs?: number;
}

function bad(message: string): HttpError {
  return HttpError.of(ErrorCode.BadRequest, message);
}

/**
 * Validates a `cache-tool-output` body, entry by entry against the wire
 * schema (`common/src/wire/cache-tool-output-schema.ts`) so each error names
 * its entry; throws 400 / 413 {@link HttpError}s.
 */
export function parseCacheToolOutput(body: unknown, limits: { maxOutputBytes: number; maxTtlMs: number }): CacheToolOutputEntry[] {
  const items: unknown[] = Array.isArray(body) ? body : [body];
  // The schema's array bounds, checked here so that an empty or long list is named before any entry.
  if (items.length === 0) throw bad("body has no entries");
  if (items.length > MAX_CACHE_TOOL_OUTPUT_ENTRIES) throw bad(`at most ${MAX_CACHE_TOOL_OUTPUT_ENTRIES} entries per request, got ${items.length}`);
  return items.map((item, i) => {
    const checked = validateCacheToolOutputEntry(item);
    if (!checked.ok) throw bad(`entry ${i}: ${checked.error}`);
    const e = checked.value;
    const output = typeof e.output === "string" ? e.output : JSON.stringify(e.output);
    // Not a schema matter: the byte limit is the pod's flag.
    const bytes = Buffer.byteLength(output, "utf8");
    if (bytes > limits.maxOutputBytes) {
      throw HttpError.of(ErrorCode.PayloadTooLarge, `entry ${i}: output of ${bytes} bytes exceeds the limit of ${limits.maxOutputBytes} bytes (--max-cached-output-bytes)`);
    }
    return {
      name: e.name,
      ...(e.params !== undefined ? { params: e.params } : {}),
      output,
      ...(e.keep_alive !== undefined ? { ttlMs: Math.min(limits.maxTtlMs, e.keep_alive * 1000) } : {}),
    };
  });
}

export function mountCacheToolOutput(app: Express, json: RequestHandler, ctx: CacheToolOutputContext): void {
  const handler = (req: Request, res: Response): void => {
    const raw = req.params["id"];
    const id = typeof raw === "string" ? raw : "";
    const session = ctx.engine().getSession(id);
    if (session === undefined) throw HttpError.of(ErrorCode.NotFound, `no response "${id}"`);
    const last = session.events[session.events.length - 1];
    if (last?.type === "done") throw HttpError.of(SESSION_FINISHED, `response "${id}" has finished; its tool cache is gone`);
    const entries = parseCacheToolOutput(req.body, { maxOutputBytes: ctx.maxOutputBytes, maxTtlMs: ctx.maxTtlMs });
    let cached = 0;
    for (const e of entries) {
      const stored = ctx.cache.put(id, e.name, e.params, Promise.resolve({ callId: "", ok: true, output: e.output, runMs: 0 }), {
        source: "client",
        replace: true,
        ...(e.ttlMs !== undefined ? { ttlMs: e.ttlMs } : {}),
      });
      if (stored !== undefined) cached++;
    }
    res.status(200).json({ cached });
  };
  app.post("/cache-tool-output/:id", json, handler);
  app.post("/v1/sessions/:id/cache-tool-output", json, handler);
}
