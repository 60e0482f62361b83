/**
 * @module Bearer-token authentication for the HTTP APIs (engine, router):
 * API keys come from a Secret as `INTERLACE_API_KEYS_FILE` (one
 * `<principal>:<key>` per line) or `INTERLACE_API_KEYS` (the same, comma
 * separated). A request without `Authorization: Bearer <key>` gets 401
 * `unauthorized` with `WWW-Authenticate`; an unknown key gets 401 too; a key
 * that may not act on a resource (another principal's session) gets 403
 * `forbidden` from the route, via {@link principalOf}. Nothing hangs: the
 * check is synchronous. Mount it after the probes: `/healthz`, `/readyz` and
 * `/metrics` stay open for kubelet and Prometheus (the chart's
 * NetworkPolicies decide who reaches them).
 *
 * Keys are compared by their SHA-256 digests, so lookups do not leak
 * through timing which prefix of a key matched.
 */
import { createHash } from "node:crypto";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { acceptedKeys, keyRingFromFiles, presentedKey, ringOf, type KeyRingSource } from "./key-ring.js";

/** API keys by the SHA-256 of the key → principal. */
export type ApiKeys = ReadonlyMap<string, string>;

/** Hex SHA-256 of an API key: how keys are compared and how an app's keys are published (never in clear). */
export const apiKeyDigest = (key: string): string => createHash("sha256").update(key).digest("hex");
const digest = apiKeyDigest;

/** The token of an `Authorization: Bearer <token>` value; undefined when there is no header, null when it is malformed. */
export function bearerToken(header: string | undefined): string | undefined | null {
  if (header === undefined || header === "") return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m === null ? null : m[1]!;
}

/** Parses `<principal>:<key>` entries (lines or commas; `#` comments). Throws on a malformed entry. */
export function parseApiKeys(text: string): ApiKeys {
  const keys = new Map<string, string>();
  for (const raw of text.split(/[\n,]/)) {
    const entry = raw.trim();
    if (entry === "" || entry.startsWith("#")) continue;
    const colon = entry.indexOf(":");
    const principal = entry.slice(0, colon).trim();
    const key = entry.slice(colon + 1).trim();
    if (colon <= 0 || principal === "" || key.length < 16) throw new Error(`API key entries are "<principal>:<key>" with a key of at least 16 characters; got one for "${principal || "?"}"`);
    keys.set(digest(key), principal);
  }
  return keys;
}

/**
 * API keys that follow a key ring whose "keys" are whole key files
 * (key-ring.ts): every entry of the current file, and those of the previous
 * file until its `validUntil` (an entry in both is the current file's). The
 * ring is asked on every lookup, so a source that reads its files again
 * (keyRingFromFiles) changes the keys in place; a file that no longer parses
 * keeps its last good keys (a half-written file is not an empty key set).
 */
export function apiKeysFromRing(source: KeyRingSource): ApiKeys {
  const parsed = new Map<string, ApiKeys>();
  let lastGood = parseApiKeys(source().current);
  parsed.set(source().current, lastGood);
  const parse = (text: string, fallback: ApiKeys): ApiKeys => {
    let keys = parsed.get(text);
    if (keys === undefined) {
      try {
        keys = parseApiKeys(text);
      } catch {
        return fallback;
      }
      if (parsed.size > 8) parsed.clear();
      parsed.set(text, keys);
    }
    return keys;
  };
  const now = (): ApiKeys => {
    const ring = source();
    lastGood = parse(ring.current, lastGood);
    const accepted = acceptedKeys(ring);
    if (accepted.length === 1) return lastGood;
    return new Map([...parse(accepted[1]!, new Map()), ...lastGood]);
  };
  return {
    get: (digest) => now().get(digest),
    has: (digest) => now().has(digest),
    get size() {
      return now().size;
    },
    forEach: (fn, thisArg) => now().forEach(fn, thisArg),
    entries: () => now().entries(),
    keys: () => now().keys(),
    values: () => now().values(),
    [Symbol.iterator]: () => now()[Symbol.iterator](),
  };
}

/**
 * The API keys configured in the environment, or null when none is
 * (authentication off: a laptop). A file is a ring: `<file>.previous` (with
 * `<file>.previous.valid-until`) beside it stays accepted until then, and
 * all of them are read again every few seconds, so a rotated key file reaches
 * the running process with a grace window and no restart.
 */
export function apiKeysFromEnv(env: NodeJS.ProcessEnv = process.env): ApiKeys | null {
  const file = env["INTERLACE_API_KEYS_FILE"];
  const inline = env["INTERLACE_API_KEYS"];
  if (file !== undefined && file !== "") return apiKeysFromRing(keyRingFromFiles(file));
  if (inline !== undefined && inline !== "") return parseApiKeys(inline);
  return null;
}

export const MISSING_KEY = "missing credentials: send Authorization: Bearer <API key>";
export const MALFORMED_AUTHORIZATION = 'the Authorization header must be "Bearer <API key>"';

/**
 * The HTTP header in which a front door (the router, the only holder of an
 * engine's API key) tells an engine on whose behalf it calls: the client's
 * key id, which a stored Response records as its owner.
 */
export const ON_BEHALF_OF_HEADER = "Interlace-On-Behalf-Of";

/** The principal of an unauthenticated request when authentication is off. */
export const ANONYMOUS = "anonymous";

function reject(res: Response, status: 401 | 403, message: string): void {
  if (status === 401) res.set("WWW-Authenticate", 'Bearer realm="interlace"');
  res.status(status).json({ error: { code: status === 401 ? "unauthorized" : "forbidden", message, type: status === 401 ? "authentication_error" : "permission_error", param: null } });
}

/**
 * The principal of an `Authorization` header value, or why it is refused (a
 * 401). With `keys` null (authentication off) everyone is {@link ANONYMOUS}.
 * Shared by the middleware and front doors that are not express (the
 * endpoint picker).
 */
export function authenticateBearer(keys: ApiKeys | null, header: string | undefined): { principal: string } | { refused: string } {
  if (keys === null) return { principal: ANONYMOUS };
  const token = bearerToken(header);
  if (token === undefined) return { refused: MISSING_KEY };
  if (token === null) return { refused: MALFORMED_AUTHORIZATION };
  const principal = keys.get(digest(token));
  return principal === undefined ? { refused: "the bearer token is not a known API key" } : { principal };
}

/** Express middleware: authenticates every request that reaches it (or lets all in as {@link ANONYMOUS} when `keys` is null). */
export function bearerAuth(keys: ApiKeys | null): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const auth = authenticateBearer(keys, req.get("Authorization"));
    if ("refused" in auth) return reject(res, 401, auth.refused);
    res.locals["principal"] = auth.principal;
    next();
  };
}

/** The authenticated principal of a request (after {@link bearerAuth}). */
export function principalOf(res: Response): string {
  const p: unknown = res.locals["principal"];
  return typeof p === "string" ? p : ANONYMOUS;
}

/** The `Authorization` value of a bearer key that may be rotating (a ring's {@link presentedKey}, asked each time). */
export function bearerOf(key: string | KeyRingSource): string {
  return `Bearer ${presentedKey(ringOf(key))}`;
}

/**
 * Headers carrying `key` as a bearer token, spread into each request: the
 * getter asks the ring at every spread, so a rotation reaches requests made
 * after it without a restart.
 */
export function bearerHeaders(key: string | KeyRingSource): Record<string, string> {
  return {
    get authorization() {
      return bearerOf(key);
    },
  };
}

/** The header a front door sends to act for `principal` (URI-encoded: a header value is ASCII). */
export function onBehalfOf(principal: string): Record<string, string> {
  return { [ON_BEHALF_OF_HEADER]: encodeURIComponent(principal) };
}

/** Whom a request acts for: the {@link ON_BEHALF_OF_HEADER} its front door set, else its own principal. */
export function actingFor(req: Request, res: Response): string {
  const header = req.get(ON_BEHALF_OF_HEADER);
  if (header === undefined || header === "") return principalOf(res);
  try {
    return decodeURIComponent(header);
  } catch {
    return header;
  }
}

/** Sends 403 `forbidden` with `message` (a route's ownership check). */
export function forbid(res: Response, message: string): void {
  reject(res, 403, message);
}
