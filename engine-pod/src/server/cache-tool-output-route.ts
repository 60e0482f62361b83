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
import { ErrorCode, TOOL_NAME_PATTERN } from "../../../common/src/index.js";
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

/** The most entries one request may carry. */
const MAX_ENTRIES = 64;

function bad(message: string): HttpError {
  return HttpError.of(ErrorCode.BadRequest, message);
}

/** Validates a `cache-tool-output` body; throws 400 / 413 {@link HttpError}s naming the entry. */
export function parseCacheToolOutput(body: unknown, limits: { maxOutputBytes: number; maxTtlMs: number }): CacheToolOutputEntry[] {
  const items = Array.isArray(body) ? body : body !== null && typeof body === "object" ? [body] : undefined;
  if (items === undefined) throw bad("body must be a JSON array of {name, params?, output, keep_alive?}");
  if (items.length === 0) throw bad("body has no entries");
  if (items.length > MAX_ENTRIES) throw bad(`at most ${MAX_ENTRIES} entries per request, got ${items.length}`);
  return items.map((item: unknown, i) => {
    if (item === null || typeof item !== "object" || Array.isArray(item)) throw bad(`entry ${i}: must be an object`);
    const e = item as Record<string, unknown>;
    for (const k of Object.keys(e)) if (!["name", "params", "output", "keep_alive"].includes(k)) throw bad(`entry ${i}: unknown field "${k}"`);
    if (typeof e["name"] !== "string" || !TOOL_NAME_PATTERN.test(e["name"])) throw bad(`entry ${i}: "name" must be a tool name matching ${TOOL_NAME_PATTERN.source}`);
    const params = e["params"];
    if (params !== undefined && (params === null || typeof params !== "object" || Array.isArray(params))) throw bad(`entry ${i}: "params" must be an object of arguments`);
    if (!("output" in e) || e["output"] === undefined) throw bad(`entry ${i}: "output" is required`);
    const output = typeof e["output"] === "string" ? e["output"] : JSON.stringify(e["output"]);
    const bytes = Buffer.byteLength(output, "utf8");
    if (bytes > limits.maxOutputBytes) {
      throw HttpError.of(ErrorCode.PayloadTooLarge, `entry ${i}: output of ${bytes} bytes exceeds the limit of ${limits.maxOutputBytes} bytes (--max-cached-output-bytes)`);
    }
    const keep = e["keep_alive"];
    if (keep !== undefined && (typeof keep !== "number" || !Number.isFinite(keep) || keep <= 0)) throw bad(`entry ${i}: "keep_alive" must be a positive number of seconds`);
    return {
      name: e["name"],
      ...(params !== undefined ? { params: params as Record<string, unknown> } : {}),
      output,
      ...(keep !== undefined ? { ttlMs: Math.min(limits.maxTtlMs, keep * 1000) } : {}),
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
