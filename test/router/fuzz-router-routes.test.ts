/**
 * @module Every route of the router fuzzed (fast-check) against a real
 * router with a real nats-server and a real engine process (the generated
 * `test` model) behind it, a real app registered (with a semantic function
 * for programs), a live session, a finished one, a stored response and
 * programs open and finished, so that each route gets past its lookups and
 * its decoder reads the body. The routes are read from the router's express
 * app: one without a fuzz entry fails the test. Each answer is a 2xx for a
 * valid request, else 4xx JSON naming the problem; never a 5xx; oversized
 * bodies are 413; the router still answers `/healthz` after each route. The
 * seed is fixed (`FUZZ_SEED`, printed).
 */
import t from "tap";
import fc from "fast-check";
import { bodies, checkAlive, checkCoverage, checkDeep, checkOversized, fuzzTable, routeInventory, segment, type FuzzContext, type RouteFuzz } from "../helpers/fuzz-http.js";
import { appConfig, longSession, openSession, postJson, QUICK, SLEEP_TOOL, startStack, streamEvents } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(300_000);
const SEED = Number(process.env["FUZZ_SEED"] ?? 26);
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 60);
const MAX_BODY = 16_384;
t.comment(`fuzz seed ${SEED}, ${RUNS} runs per route (FUZZ_SEED / FUZZ_RUNS to change)`);

const stack = await startStack(t, { engines: 1, routers: 1, engineArgs: ["--sequences", "4"], router: { maxBodyBytes: MAX_BODY } });
const base = stack.url(0);
const APP = "fuzz";
const root = `/v1/apps/default/${APP}`;
await stack.putApp(
  appConfig(APP, {
    tools: [SLEEP_TOOL],
    semanticFunctions: [{ name: "shout", template: "Say {{input:text}} loudly: {{output:loud}}", outputs: [{ name: "loud", maxTokens: 3, temperature: 0 }], tools: false }],
  }),
);

const live = await openSession(base, APP, longSession(600_000));
const done = await openSession(base, APP, QUICK);
await streamEvents(base, APP, done.id);
const stored = await postJson(`${base}${root}/responses`, { input: "Hi.", max_output_tokens: 4 });
if (stored.status !== 200) throw new Error(`response: ${stored.status} ${await stored.text()}`);
const responseId = ((await stored.json()) as { id: string }).id;
const createProgram = async (body: unknown): Promise<string> => {
  const res = await postJson(`${base}${root}/programs`, body);
  if (res.status !== 201) throw new Error(`program: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
};
const VALID_PROGRAM = { inputs: { t: "hi" }, calls: [{ id: "c", function: "shout", inputs: { text: "t" }, outputs: { loud: "l" } }] };
const openProgram = await createProgram({ open: true, inputs: { t: "hi" } });
const finishedProgram = await createProgram(VALID_PROGRAM);
if (!(await eventually(async () => ((await (await fetch(`${base}${root}/programs/${finishedProgram}`)).json()) as { state: string }).state === "succeeded", 60_000))) throw new Error("the program did not finish");
t.teardown(() => fetch(`${base}${root}/sessions/${live.id}`, { method: "DELETE" }));

const path = (template: string, ...segments: fc.Arbitrary<string>[]): fc.Arbitrary<string> => {
  const parts = template.split(/:[a-z]+/);
  return fc.tuple(...segments).map((s) => parts.map((p, i) => p + (s[i] ?? "")).join(""));
};
const fixed = (p: string): fc.Arbitrary<string> => fc.constant(p);
const ns = segment("default");
const app = segment(APP);
const lastEventId = fc.oneof(fc.constant({}), fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom("-5", "-1", "0", "1e9", "NaN", "9007199254740993")).map((s) => ({ "last-event-id": s.replace(/[^\x20-\x7e]/g, "") })));
const query = (keys: string[], values: string[]): fc.Arbitrary<string> =>
  fc.dictionary(fc.constantFrom(...keys, "__proto__"), fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom(...values)), { maxKeys: 3 }).map((q) => new URLSearchParams(q).toString());

const VALID = {
  session: { prompt: "Hi.", policy: { type: "text", pieces: ["ok"] } },
  interrupt: { value: "hello", kind: "user" },
  cacheEntry: { name: "sleep", params: { ms: 1 }, output: "a" },
  chat: { messages: [{ role: "user", content: "Hi." }], max_tokens: 2 },
  response: { input: "Hi.", max_output_tokens: 2, store: false },
  calls: { calls: [{ id: "d", function: "shout", inputs: { text: "t" }, outputs: { loud: "m" } }] },
};

/** The fuzz table: one entry per route the router registers. */
const table: Record<string, RouteFuzz> = {
  "GET /healthz": { path: fixed("/healthz"), ok: [200], runs: 5 },
  "GET /readyz": { path: fixed("/readyz"), ok: [200], runs: 5 },
  "GET /metrics": { path: fixed("/metrics"), ok: [200], runs: 5 },
  "GET /v1/apps/:ns/:app": { path: path("/v1/apps/:ns/:app", ns, app), ok: [200] },
  "POST /v1/apps/:ns/:app/sessions": { path: path("/v1/apps/:ns/:app/sessions", ns, app), body: bodies(VALID.session), ok: [201] },
  "GET /v1/apps/:ns/:app/sessions/:id/events": { path: path("/v1/apps/:ns/:app/sessions/:id/events", ns, app, segment(done.id)), headers: lastEventId, ok: [200] },
  "POST /v1/apps/:ns/:app/sessions/:id/interrupts": { path: path("/v1/apps/:ns/:app/sessions/:id/interrupts", ns, app, segment(live.id)), body: bodies(VALID.interrupt), ok: [202] },
  "POST /v1/apps/:ns/:app/sessions/:id/cache-tool-output": { path: path("/v1/apps/:ns/:app/sessions/:id/cache-tool-output", ns, app, segment(live.id)), body: bodies(VALID.cacheEntry), ok: [200] },
  "POST /v1/apps/:ns/:app/cache-tool-output/:id": { path: path("/v1/apps/:ns/:app/cache-tool-output/:id", ns, app, segment(live.id)), body: bodies(VALID.cacheEntry).map((b) => `[${b}]`), ok: [200] },
  "DELETE /v1/apps/:ns/:app/sessions/:id": { path: path("/v1/apps/:ns/:app/sessions/:id", ns, app, segment(done.id)), ok: [200] },
  "POST /v1/apps/:ns/:app/chat/completions": { path: path("/v1/apps/:ns/:app/chat/completions", ns, app), body: bodies(VALID.chat), ok: [200] },
  "POST /v1/apps/:ns/:app/responses": {
    path: path("/v1/apps/:ns/:app/responses", ns, app),
    body: fc.oneof(bodies(VALID.response), bodies({ ...VALID.response, previous_response_id: responseId })),
    ok: [200],
  },
  "GET /v1/apps/:ns/:app/responses/:id": { path: path("/v1/apps/:ns/:app/responses/:id", ns, app, segment(responseId)), ok: [200] },
  "GET /v1/apps/:ns/:app/responses/:id/input_items": {
    path: fc.tuple(path("/v1/apps/:ns/:app/responses/:id/input_items", ns, app, segment(responseId)), query(["order", "limit", "after"], ["asc", "desc", "0", "100", "-1"])).map(([p, q]) => `${p}?${q}`),
    ok: [200],
  },
  "POST /v1/apps/:ns/:app/responses/:id/cancel": { path: path("/v1/apps/:ns/:app/responses/:id/cancel", ns, app, segment(responseId)), body: bodies() },
  "POST /v1/apps/:ns/:app/programs": { path: path("/v1/apps/:ns/:app/programs", ns, app), body: fc.oneof(bodies(VALID_PROGRAM), bodies({ open: true, inputs: { t: "x" } })), ok: [201] },
  "POST /v1/apps/:ns/:app/programs/:id/calls": { path: path("/v1/apps/:ns/:app/programs/:id/calls", ns, app, segment(openProgram)), body: bodies(VALID.calls), ok: [200] },
  "GET /v1/apps/:ns/:app/programs/:id": { path: path("/v1/apps/:ns/:app/programs/:id", ns, app, segment(finishedProgram)), ok: [200] },
  "GET /v1/apps/:ns/:app/programs/:id/events": { path: path("/v1/apps/:ns/:app/programs/:id/events", ns, app, segment(finishedProgram)), headers: lastEventId, ok: [200] },
  "GET /v1/apps/:ns/:app/variables/:id": {
    path: fc
      .tuple(path("/v1/apps/:ns/:app/variables/:id", ns, app, segment(`${finishedProgram}.l`, `${finishedProgram}.t`, `${finishedProgram}.x`, finishedProgram)), query(["criteria", "timeoutMs"], ["latency", "throughput", "0", "10", "-1", "1e9"]))
      .map(([p, q]) => `${p}?${q}`),
    ok: [200],
  },
  // Last: a valid id ends the response or the program.
  "DELETE /v1/apps/:ns/:app/responses/:id": { path: path("/v1/apps/:ns/:app/responses/:id", ns, app, segment(responseId)), ok: [200] },
  "DELETE /v1/apps/:ns/:app/programs/:id": { path: path("/v1/apps/:ns/:app/programs/:id", ns, app, segment(openProgram, finishedProgram)), ok: [200] },
};

const ctx: FuzzContext = { base, seed: SEED, runs: RUNS };
const router = stack.routers[0]!;

t.test("the fuzz table covers every route the router serves", async (t) => {
  checkCoverage(t, routeInventory(router.app), table);
});

t.test("fuzzed bodies, ids, queries and headers: 2xx or 4xx JSON naming the problem, never a 5xx or a crash", async (t) => {
  await fuzzTable(t, ctx, table);
});

t.test("oversized bodies are 413 and deeply nested ones 400 on every route that reads one", async (t) => {
  for (const p of ["sessions", `sessions/${live.id}/interrupts`, `sessions/${live.id}/cache-tool-output`, `cache-tool-output/${live.id}`, "chat/completions", "responses", "programs", `programs/${openProgram}/calls`]) {
    await checkOversized(t, ctx, "POST", `${root}/${p}`, MAX_BODY);
    await checkDeep(t, ctx, "POST", `${root}/${p}`);
  }
  await checkAlive(t, base, "oversized bodies");
});

t.test("a program's event stream replays from the start for a Last-Event-ID that is not an event index", async (t) => {
  for (const id of ["-5", "0.5", "x"]) {
    const res = await fetch(`${base}${root}/programs/${finishedProgram}/events`, { headers: { accept: "text/event-stream", "last-event-id": id } });
    const text = await res.text();
    t.match(text, /event: done/, `Last-Event-ID ${id}: the whole log, ending with done (${text.length} bytes)`);
  }
});
