/**
 * @module Every route of the engine's HTTP server fuzzed (fast-check) against
 * a real engine pod (llama.cpp on the generated `test` model) with live
 * sessions and a stored response, so that session- and response-scoped
 * routes get past their lookups and each body reaches its decoder. The
 * routes are read from the express app itself: one without a fuzz entry
 * fails the test. Each answer is a 2xx for a body that happens to be valid,
 * else 4xx JSON naming the problem; never a 5xx; oversized bodies are 413;
 * the pod still answers `/healthz` after each route. The seed is fixed
 * (`FUZZ_SEED`, printed) so that a failure replays.
 */
import t from "tap";
import fc from "fast-check";
import { bodies, checkAlive, checkCoverage, checkDeep, checkOversized, fuzzTable, routeInventory, segment, type FuzzContext, type RouteFuzz } from "../helpers/fuzz-http.js";
import { postJson, startTestPod } from "./helpers.js";
import { eventually } from "../helpers/wait.js";

const SEED = Number(process.env["FUZZ_SEED"] ?? 26);
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 100);
const MAX_BODY = 16_384;
t.comment(`fuzz seed ${SEED}, ${RUNS} runs per route (FUZZ_SEED / FUZZ_RUNS to change)`);

const { base, pod } = await startTestPod(t, ["--sequences", "4", "--max-body-bytes", String(MAX_BODY), "--max-prompt-bytes", "8192", "--prefix-cache", "false", "--kv-retention", "pin"]);

/** A session parked on a 10-minute call: live for the whole test, so its routes parse their bodies. */
const parked = { prompt: "Wait.", tools: ["sleep", "echo"], maxTokens: 64, kvPolicy: "keep", policy: { type: "lpt-dag", calls: [{ id: "w", tool: "sleep", arguments: { ms: 600_000 }, dependsOn: [], estimatedLatencyMs: 600_000 }] } };
async function open(body: unknown): Promise<string> {
  const res = await postJson(`${base}/v1/sessions`, body);
  if (res.status !== 201) throw new Error(`open: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}
const interrupted = await open(parked);
const cached = await open(parked);
const finished = await open({ prompt: "Hi.", policy: { type: "text", pieces: ["Hi", "."] } });
if (!(await eventually(() => pod.engine.getSession(finished)?.events.at(-1)?.type === "done", 30_000))) throw new Error("the scripted session did not finish");
const stored = await postJson(`${base}/v1/responses`, { input: "Hi.", max_output_tokens: 4 });
if (stored.status !== 200) throw new Error(`response: ${stored.status} ${await stored.text()}`);
const responseId = ((await stored.json()) as { id: string }).id;
t.teardown(() => Promise.all([interrupted, cached].map((id) => fetch(`${base}/v1/sessions/${id}`, { method: "DELETE" }))));

const path = (template: string, ...segments: fc.Arbitrary<string>[]): fc.Arbitrary<string> => {
  const parts = template.split(/:[a-z]+/);
  return fc.tuple(...segments).map((s) => parts.map((p, i) => p + (s[i] ?? "")).join(""));
};
const fixed = (p: string): fc.Arbitrary<string> => fc.constant(p);
const query = fc.dictionary(fc.constantFrom("order", "limit", "after", "__proto__", "x"), fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom("asc", "desc", "0", "100", "101", "1e3", "-1")), { maxKeys: 3 }).map((q) => new URLSearchParams(q).toString());

const VALID = {
  session: { prompt: "Hi.", maxTokens: 4, policy: { type: "text", pieces: ["ok"] } },
  interrupt: { value: "hello", kind: "user" },
  cacheEntry: { name: "echo", params: { text: "a" }, output: "a", keep_alive: 5 },
  chat: { model: "test", messages: [{ role: "user", content: "Hi." }], max_tokens: 2 },
  response: { input: "Hi.", max_output_tokens: 2, store: false },
};

/** The fuzz table: one entry per route the engine registers. */
const table: Record<string, RouteFuzz> = {
  "GET /healthz": { path: fixed("/healthz"), ok: [200], runs: 5 },
  "GET /readyz": { path: fixed("/readyz"), ok: [200], runs: 5 },
  "GET /metrics": { path: fixed("/metrics"), ok: [200], runs: 5 },
  "GET /openapi.json": { path: fixed("/openapi.json"), ok: [200], runs: 5 },
  "POST /v1/sessions": { path: fixed("/v1/sessions"), body: bodies(VALID.session), ok: [201] },
  // This pod keeps no prefix store: a valid body is a 409 naming why, anything else a 400.
  "POST /v1/prefixes": { path: fixed("/v1/prefixes"), body: bodies({ ...VALID.session, system: "You help." }), ok: [200, 201] },
  "GET /v1/sessions/:id/events": {
    path: path("/v1/sessions/:id/events", segment(finished)),
    headers: fc.oneof(fc.constant({}), fc.string({ maxLength: 30 }).map((s) => ({ "last-event-id": s.replace(/[^\x20-\x7e]/g, "") }))),
    ok: [200],
  },
  "POST /v1/sessions/:id/interrupts": { path: path("/v1/sessions/:id/interrupts", segment(interrupted)), body: bodies(VALID.interrupt), ok: [202] },
  "DELETE /v1/sessions/:id": { path: path("/v1/sessions/:id", segment(finished)), ok: [200] },
  "POST /cache-tool-output/:id": { path: path("/cache-tool-output/:id", segment(cached)), body: fc.oneof(bodies(VALID.cacheEntry), bodies(VALID.cacheEntry).map((b) => `[${b}]`)), ok: [200] },
  "POST /v1/sessions/:id/cache-tool-output": { path: path("/v1/sessions/:id/cache-tool-output", segment(cached)), body: bodies(VALID.cacheEntry), ok: [200] },
  "POST /v1/chat/completions": { path: fixed("/v1/chat/completions"), body: bodies(VALID.chat), ok: [200] },
  "GET /v1/responses/:id": { path: path("/v1/responses/:id", segment(responseId)), ok: [200] },
  "GET /v1/responses/:id/input_items": { path: fc.tuple(path("/v1/responses/:id/input_items", segment(responseId)), query).map(([p, q]) => `${p}?${q}`), ok: [200] },
  "POST /v1/responses/:id/cancel": { path: path("/v1/responses/:id/cancel", segment(responseId)), body: bodies() },
  "POST /v1/responses": { path: fixed("/v1/responses"), body: bodies(VALID.response), ok: [200] },
  // Last: a valid id deletes the stored response.
  "DELETE /v1/responses/:id": { path: path("/v1/responses/:id", segment(responseId)), ok: [200] },
};

const ctx: FuzzContext = { base, seed: SEED, runs: RUNS };

t.test("the fuzz table covers every route the engine serves", async (t) => {
  checkCoverage(t, routeInventory(pod.server.app), table);
});

t.test("fuzzed bodies, ids, queries and headers: 2xx or 4xx JSON naming the problem, never a 5xx or a crash", async (t) => {
  await fuzzTable(t, ctx, table);
  t.not(pod.engine.getSession(cached)?.events.at(-1)?.type, "done", `the session the cache routes parsed against was live throughout (${JSON.stringify(pod.engine.getSession(cached)?.events.slice(-3))})`);
  t.ok(pod.engine.getSession(interrupted) !== undefined, "the session the interrupts went to is still known (its route parsed every body)");
});

t.test("oversized bodies are 413 and deeply nested ones 400 on every route that reads one", async (t) => {
  for (const p of ["/v1/sessions", "/v1/prefixes", `/v1/sessions/${interrupted}/interrupts`, `/cache-tool-output/${cached}`, `/v1/sessions/${cached}/cache-tool-output`, "/v1/chat/completions", "/v1/responses"]) {
    await checkOversized(t, ctx, "POST", p, MAX_BODY);
    await checkDeep(t, ctx, "POST", p);
  }
  await checkAlive(t, base, "oversized bodies");
});
