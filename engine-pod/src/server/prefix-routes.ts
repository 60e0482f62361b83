/**
 * @module `POST /v1/prefixes`: a router asks an idle engine to hold an app's
 * shared prefix (system prompt and tool block) in its prefix store before
 * that app's sessions spill to it, so they fork the prefix instead of
 * prefilling it in the middle of a burst. The body is a session creation
 * body (`POST /v1/sessions`), validated and rendered by the same code, so
 * the stored tokens are exactly those a session of the app starts with; no
 * session is admitted and nothing is generated. Answers: 201 `warmed`, 200
 * `held` (already there: a second router replica asking the same is a
 * no-op), 429 `capacity` (busy: a session prefilling, no free sequence, or
 * another warm running; `Retry-After`), 409 (`no_prefix_store`: this engine
 * keeps none; `no_shared_prefix`: nothing to store; `prefix_store_full`:
 * every entry holds an app homed here, which a warm does not replace), 400
 * for a bad body.
 */
import type { Express, Request, RequestHandler, Response } from "express";
import { ErrorCode, type Logger } from "../../../common/src/index.js";
import type { Engine, PrefixWarmResult } from "../engine/index.js";
import type { EngineMetrics } from "../metrics/index.js";
import { HttpError } from "./http-errors.js";
import type { ToolCatalog } from "./resolve-tools.js";
import { parseCreateSessionRequest } from "./validate-request.js";

export interface PrefixRoutesContext {
  engine: () => Engine;
  catalog: ToolCatalog;
  maxPromptBytes: number;
  metrics: EngineMetrics;
  log: Logger;
  retryAfterSeconds: number;
}

/** Refusals that are no error of the request: the engine cannot hold this prefix here. */
const CONFLICT_CODES = { "no-store": "no_prefix_store", "no-prefix": "no_shared_prefix", full: "prefix_store_full" } as const;

export function mountPrefixRoutes(app: Express, json: RequestHandler, ctx: PrefixRoutesContext): void {
  app.post("/v1/prefixes", json, async (req: Request, res: Response) => {
    const request = parseCreateSessionRequest(req.body, ctx.catalog, { maxPromptBytes: ctx.maxPromptBytes });
    const engine = ctx.engine();
    if (engine.warmPrefix === undefined) {
      ctx.metrics.prefixWarms.inc({ outcome: "no-store" });
      throw new HttpError(409, CONFLICT_CODES["no-store"], "this engine keeps no KV cells of its own to warm");
    }
    let result: PrefixWarmResult;
    try {
      result = await engine.warmPrefix(request);
    } catch (err) {
      ctx.metrics.prefixWarms.inc({ outcome: "error" });
      throw err;
    }
    ctx.metrics.prefixWarms.inc({ outcome: result.outcome });
    const reason = result.reason ?? result.outcome;
    switch (result.outcome) {
      case "warmed":
        ctx.log.info({ tokens: result.tokens, prefilled: result.prefilledTokens }, "prefix warmed into the store");
        res.status(201).json(result);
        return;
      case "held":
        res.status(200).json(result);
        return;
      case "busy":
        throw new HttpError(429, ErrorCode.Capacity, `not warming now: ${reason}`, { "Retry-After": String(ctx.retryAfterSeconds) });
      case "no-store":
      case "no-prefix":
      case "full":
        throw new HttpError(409, CONFLICT_CODES[result.outcome], reason);
    }
  });
}
