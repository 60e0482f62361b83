/**
 * @module The JSON body parser of the HTTP servers (engine and router):
 * express's parser under the size limit, read as JSON whatever the
 * Content-Type (curl -d sends form encoding), then a bound on nesting.
 * `JSON.parse` accepts any depth, but the code after it recurses
 * (`JSON.stringify`, schema checks, canonical keys): a small body of a few
 * thousand brackets overflowed the stack there and answered 500 (found by
 * the route fuzzers). A body nested deeper than {@link MAX_JSON_DEPTH} is a
 * 400 `invalid_json` that says so.
 */
import express, { type RequestHandler } from "express";
import { ErrorCode } from "./errors.js";
import { HttpError } from "./http-error.js";

/** Deepest nesting of arrays and objects a request body may have (far beyond any real request or JSON Schema). */
export const MAX_JSON_DEPTH = 64;

/** How deep `value` nests, counted without recursion; stops counting past `limit`. */
export function jsonDepth(value: unknown, limit = Infinity): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    const level = depth + 1;
    if (level > deepest) deepest = level;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, level]);
  }
  return deepest;
}

/** express's JSON parser (any Content-Type, `limit` bytes → 413), then 400 for a body nested deeper than `maxDepth`. */
export function jsonBody(options: { limit: number; maxDepth?: number }): RequestHandler {
  const parse = express.json({ limit: options.limit, type: () => true });
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  return (req, res, next) =>
    parse(req, res, (err?: unknown) => {
      if (err !== undefined && err !== null) return next(err);
      if (jsonDepth(req.body, maxDepth) > maxDepth) return next(HttpError.of(ErrorCode.InvalidJson, `request body nests arrays and objects deeper than ${maxDepth} levels`));
      next();
    });
}
