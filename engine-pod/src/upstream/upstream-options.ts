/**
 * @module Options of the `openai` backend: where the upstream
 * OpenAI-compatible server is (`--upstream-url`, the base URL that ends in
 * `/v1`), which model it serves, how long one upstream request may take, how
 * often a request that produced nothing yet is retried, and an optional
 * bearer token (env only in production: `UPSTREAM_API_KEY`).
 */
import { ErrorCode, InterlaceError, intOpt, optionalStringOpt, stringOpt, type Source } from "../../../common/src/index.js";

export interface UpstreamOptions {
  /** Base URL, e.g. `http://vllm:8000/v1` (a trailing `/` is dropped; `/v1` is added when absent). */
  url: string;
  /** The `model` field of upstream requests. */
  model: string;
  /** Whole-request deadline per upstream request, ms (→ `upstream_timeout`). */
  timeoutMs: number;
  /** Retries of a request that failed before any output (connection refused, 502/503/504). */
  retries: number;
  apiKey?: string;
}

function invalid(message: string): InterlaceError {
  return new InterlaceError(ErrorCode.BadRequest, message);
}

/** `http://host:8000` or `http://host:8000/v1/` → `http://host:8000/v1`. */
export function normalizeUpstreamUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(`invalid --upstream-url (UPSTREAM_URL): "${raw}" is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalid(`invalid --upstream-url (UPSTREAM_URL): "${raw}" must be http(s)`);
  let path = url.pathname.replace(/\/+$/, "");
  if (!path.endsWith("/v1")) path += "/v1";
  return `${url.origin}${path}`;
}

/** Reads `--upstream-url`, `--upstream-model`, `--upstream-timeout-ms`, `--upstream-retries`, `--upstream-api-key`. */
export function parseUpstreamOptions(src: Source): UpstreamOptions {
  const raw = optionalStringOpt(src, "upstream-url");
  if (raw === undefined || raw === "") throw invalid("--backend openai needs --upstream-url (UPSTREAM_URL), e.g. http://vllm:8000/v1");
  const apiKey = optionalStringOpt(src, "upstream-api-key");
  return {
    url: normalizeUpstreamUrl(raw),
    model: stringOpt(src, "upstream-model", "default"),
    timeoutMs: intOpt(src, "upstream-timeout-ms", 120_000, { min: 1, max: 3_600_000 }),
    retries: intOpt(src, "upstream-retries", 2, { min: 0, max: 10 }),
    ...(apiKey !== undefined && apiKey !== "" ? { apiKey } : {}),
  };
}
