/**
 * @module Fuzzing an HTTP server's routes with fast-check: the route
 * inventory read from the express app itself (so a route added without a
 * fuzz entry fails the test that uses it), hostile request bodies (malformed
 * JSON, wrong types, huge strings, deep nesting, unicode,
 * prototype-pollution keys, and valid bodies with one field broken), and
 * the assertions every answer must pass: never a 5xx, an error is 4xx JSON
 * whose `error.message` names the problem, an oversized body is 413, and the
 * process still answers `/healthz` afterwards.
 */
import type { Test } from "tap";
import type { Express } from "express";
import fc from "fast-check";

/** One route as the app registered it. */
export interface RouteRef {
  method: string;
  path: string;
}

export const routeKey = (r: RouteRef): string => `${r.method} ${r.path}`;

/** Every method + path the express (5) app routes, in registration order. */
export function routeInventory(app: Express): RouteRef[] {
  const stack = (app as unknown as { router: { stack: { route?: { path: unknown; methods: Record<string, boolean> } }[] } }).router.stack;
  const routes: RouteRef[] = [];
  for (const layer of stack) {
    if (layer.route === undefined || typeof layer.route.path !== "string") continue;
    for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== "_all") routes.push({ method: method.toUpperCase(), path: layer.route.path });
  }
  return routes;
}

/** Fails the test unless the inventory and the fuzz table name the same routes. */
export function checkCoverage(t: Test, inventory: readonly RouteRef[], table: Readonly<Record<string, unknown>>): void {
  const served = new Set(inventory.map(routeKey));
  const missing = [...served].filter((k) => !(k in table));
  const stale = Object.keys(table).filter((k) => !served.has(k));
  t.same(missing, [], `every route the server registers has a fuzz entry (${served.size} routes)`);
  t.same(stale, [], "every fuzz entry is a route the server registers");
}

/** Object keys an attacker tries: prototype pollution and near-misses of real fields. */
const HOSTILE_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "__defineGetter__"];

const scalar = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -1, 1e308, -1e308, 2 ** 53 + 1, 1e-320, "", " ", "\u0000", "\ud800", "\u202e", "𝕏", null, true, false),
  fc.nat({ max: 20_000 }).map((n) => "x".repeat(n)),
);

/** JSON values with hostile keys, odd scalars and some depth. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalar,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 12 })), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** Every path to a value inside `value` (object keys and array indexes). */
export function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== "object") return [prefix];
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return [prefix, ...entries.flatMap(([k, v]) => paths(v, [...prefix, k]))];
}

/** A copy of `value` with the value at `path` replaced (`undefined`: removed). */
export function setAt(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  const copy = (Array.isArray(value) ? [...(value as unknown[])] : { ...(value as Record<string, unknown>) }) as Record<string | number, unknown>;
  copy[head] = setAt(copy[head], rest, replacement);
  return copy;
}

/** Nesting deeper than any decoder should recurse into: arrays or objects `depth` levels down. */
const deepNesting = fc.tuple(fc.integer({ min: 100, max: 6_000 }), fc.boolean(), fc.constantFrom("prompt", "messages", "value", "input", "arguments", "params", "output")).map(([depth, arrays, key]) => {
  const inner = arrays ? "[".repeat(depth) + "1" + "]".repeat(depth) : '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
  return `{"${key}":${inner}}`;
});

/** Text that is not JSON, or barely is. */
const malformed = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.constantFrom("", "{", "[", '{"a":', "null", "nul", "\"\\ud800\"", "{\"__proto__\":{\"polluted\":1}}", "{\"constructor\":{\"prototype\":{\"polluted\":1}}}", "1e999999", "-", "\uFEFF{}"),
  fc.json({ maxDepth: 3 }).map((j) => j.slice(0, Math.max(0, j.length - 1))),
);

/**
 * Bodies for a route: anything hostile, and `valid` (a body the route
 * accepts) with one field replaced, removed, or joined by a hostile key.
 */
export function bodies(valid?: Record<string, unknown>): fc.Arbitrary<string> {
  const arbs: fc.Arbitrary<string>[] = [malformed, deepNesting, hostileValue.map((v) => JSON.stringify(v) ?? "null")];
  if (valid !== undefined) {
    const fields = Object.keys(valid);
    arbs.push(
      fc.tuple(fc.constantFrom(...fields), hostileValue).map(([k, v]) => JSON.stringify({ ...valid, [k]: v })),
      fc.constantFrom(...fields).map((k) => {
        const { [k]: _drop, ...rest } = valid;
        return JSON.stringify(rest);
      }),
      fc.tuple(fc.constantFrom(...HOSTILE_KEYS), hostileValue).map(([k, v]) => `${JSON.stringify(valid).slice(0, -1)},${JSON.stringify(k)}:${JSON.stringify(v) ?? "null"}}`),
    );
  }
  return fc.oneof(...arbs);
}

/** A path segment: mostly `known` (so the route gets past its lookups), else anything URL-safe-encoded. */
export function segment(...known: string[]): fc.Arbitrary<string> {
  const random = fc.oneof(fc.string({ minLength: 1, maxLength: 60 }), fc.string({ unit: "grapheme", minLength: 1, maxLength: 20 }), fc.constantFrom("..", "%", "__proto__", "constructor", "x".repeat(2_000)));
  return known.length === 0 ? random.map(encodeURIComponent) : fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: random.map(encodeURIComponent) });
}

/** How one route is fuzzed. */
export interface RouteFuzz {
  /** The request path for this run (path parameters filled in). */
  path: fc.Arbitrary<string>;
  /** Request bodies (POST routes); absent: none. */
  body?: fc.Arbitrary<string>;
  /** Extra headers (e.g. a fuzzed `Last-Event-ID`). */
  headers?: fc.Arbitrary<Record<string, string>>;
  /** Statuses that are fine besides 4xx (2xx for a body that happens to be valid; 200 streams are cancelled). */
  ok?: readonly number[];
  runs?: number;
}

export interface FuzzContext {
  base: string;
  seed: number;
  runs: number;
  /** Headers on every request (an API key). */
  headers?: Record<string, string>;
}

/**
 * Runs one route's property: each answer is 2xx (when allowed), or 4xx JSON
 * with a non-empty `error.message`; never 5xx, never a hang. Returns the
 * status histogram.
 */
export async function fuzzRoute(t: Test, ctx: FuzzContext, route: RouteRef, fuzz: RouteFuzz): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const arb = fc.record({ path: fuzz.path, body: fuzz.body ?? fc.constant(undefined), headers: fuzz.headers ?? fc.constant({}) });
  const allowed = new Set(fuzz.ok ?? []);
  let failure: string | undefined;
  await fc.assert(
    fc.asyncProperty(arb, async ({ path, body, headers }) => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 15_000);
      try {
        const res = await fetch(`${ctx.base}${path}`, {
          method: route.method,
          headers: { "content-type": "application/json", ...ctx.headers, ...headers },
          ...(body !== undefined ? { body } : {}),
          signal: controller.signal,
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status < 400 && allowed.has(res.status)) {
          // A valid request: streams are cut (the route's own tests read them).
          await res.body?.cancel();
          return;
        }
        const text = await res.text();
        const detail = `${route.method} ${path} ${body === undefined ? "" : body.slice(0, 300)} → ${res.status} ${text.slice(0, 300)}`;
        if (res.status < 400 || res.status >= 500) throw new Error(`unexpected status: ${detail}`);
        let parsed: { error?: { message?: unknown } };
        try {
          parsed = JSON.parse(text) as typeof parsed;
        } catch {
          throw new Error(`error is not JSON: ${detail}`);
        }
        if (typeof parsed.error?.message !== "string" || parsed.error.message === "") throw new Error(`error names no problem: ${detail}`);
      } catch (err) {
        failure ??= (err as Error).message;
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }),
    { numRuns: fuzz.runs ?? ctx.runs, seed: ctx.seed, endOnFailure: true },
  ).catch((err: unknown) => {
    t.fail(`${routeKey(route)}: ${failure ?? (err as Error).message}`);
  });
  return statuses;
}

/** A body over `limit` bytes gets 413 JSON naming the limit. */
export async function checkOversized(t: Test, ctx: FuzzContext, method: string, path: string, limit: number): Promise<void> {
  const body = JSON.stringify({ prompt: "x".repeat(limit + 1) });
  const res = await fetch(`${ctx.base}${path}`, { method, headers: { "content-type": "application/json", ...ctx.headers }, body });
  const text = await res.text();
  t.equal(res.status, 413, `${method} ${path}: a body of ${body.length} bytes is 413 (${text.slice(0, 160)})`);
}

/** A small body nested thousands of levels deep (under the size limit) is a 400 naming the nesting, not a stack overflow. */
export async function checkDeep(t: Test, ctx: FuzzContext, method: string, path: string): Promise<void> {
  const depth = 4_000;
  const body = `[{"name":"x","output":${"[".repeat(depth)}1${"]".repeat(depth)}}]`;
  const res = await fetch(`${ctx.base}${path}`, { method, headers: { "content-type": "application/json", ...ctx.headers }, body });
  const text = await res.text();
  t.equal(res.status, 400, `${method} ${path}: a body nested ${depth} deep is 400 (${text.slice(0, 160)})`);
  t.match(text, /nests arrays and objects deeper than/, "the error says why");
}

/** The process still answers its liveness probe. */
export async function checkAlive(t: Test, base: string, after: string): Promise<void> {
  const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(10_000) });
  t.equal(res.status, 200, `still alive (/healthz 200) after ${after}`);
}

/** Fuzzes every route of `table` (keys `METHOD /path/template`) in turn, checking the process is alive after each. */
export async function fuzzTable(t: Test, ctx: FuzzContext, table: Record<string, RouteFuzz>): Promise<void> {
  for (const [key, fuzz] of Object.entries(table)) {
    const [method, template] = key.split(" ") as [string, string];
    const statuses = await fuzzRoute(t, ctx, { method, path: template }, fuzz);
    t.comment(`fuzzed ${key}: ${[...statuses.values()].reduce((a, b) => a + b, 0)} requests (${histogram(statuses)})`);
    await checkAlive(t, ctx.base, key);
  }
}

export const histogram = (statuses: Map<number, number>): string =>
  [...statuses]
    .sort(([a], [b]) => a - b)
    .map(([s, c]) => `${s}×${c}`)
    .join(", ");
