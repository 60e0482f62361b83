/**
 * @module The session API end to end on a real engine (llama.cpp on the
 * generated `test` model, builtin tools in-process): SSE events of an async
 * scripted session, user interrupts by POST, DELETE, replay for late and
 * reconnecting readers, probes and metrics.
 */
import t from "tap";
import type { CreateSessionRequest } from "../../common/src/index.js";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { ofType, postJson, readSession, sseFrames, startTestPod } from "./helpers.js";
import { waitFor } from "../helpers/wait.js";

const { base, pod } = await startTestPod(t);

const lpt: CreateSessionRequest = {
  prompt: "Plan a trip: weather and a sum.",
  tools: builtinToolSpecs().filter((s) => s.name !== "replay"),
  maxTokens: 400,
  policy: {
    type: "lpt-dag",
    calls: [
      { id: "slow", tool: "sleep", arguments: { ms: 300, result: "sunny" }, dependsOn: [], estimatedLatencyMs: 300 },
      { id: "fast", tool: "echo", arguments: { text: "hello" }, dependsOn: [], estimatedLatencyMs: 1 },
      { id: "sum", tool: "calculator", arguments: { expression: "2 + 3" }, dependsOn: ["fast"], estimatedLatencyMs: 1 },
    ],
    finalText: " All done.",
  },
};

t.test("probes", async (t) => {
  t.equal((await fetch(`${base}/healthz`)).status, 200);
  const ready = await fetch(`${base}/readyz`);
  t.equal(ready.status, 200);
  t.same(await ready.json(), { status: "ready" });
});

t.test("an async session streams calls, interrupts and done over SSE", async (t) => {
  const created = await postJson(`${base}/v1/sessions`, lpt);
  t.equal(created.status, 201);
  const { id, eventsUrl } = (await created.json()) as { id: string; eventsUrl: string };
  t.equal(eventsUrl, `/v1/sessions/${id}/events`);
  const res = await fetch(`${base}${eventsUrl}`);
  t.match(res.headers.get("content-type"), /text\/event-stream/);
  const frames = [];
  for await (const frame of sseFrames(res)) frames.push(frame);
  const events = frames.map((f) => JSON.parse(f.data) as { type: string });
  t.same(frames.map((f) => f.event), events.map((e) => e.type), "each frame is named by its event type");
  t.same(frames.map((f) => f.id), events.map((_, i) => String(i)), "frame ids are event indexes");
  const typed = events as Parameters<typeof ofType>[0];
  t.equal(typed[0]?.type, "started");
  const started = ofType(typed, "started")[0]!;
  t.equal(started.scripted, true, "a scripted session says so");
  t.same(ofType(typed, "call").map((c) => c.callId), ["slow", "fast", "sum"], "LPT order: longest first, dependents after their inputs");
  const results = ofType(typed, "interrupt");
  t.same(new Set(results.map((i) => i.id)), new Set(["slow", "fast", "sum"]), "every result was injected");
  t.equal(results.find((i) => i.id === "sum")?.value, "5");
  t.equal(results.find((i) => i.id === "slow")?.value, "sunny");
  const done = typed[typed.length - 1];
  t.equal(done?.type, "done", "the stream ends after done");
  t.equal(frames.length, typed.length);
});

t.test("sync and syncParallel sessions run the same workload through the API", async (t) => {
  for (const mode of ["sync", "syncParallel"] as const) {
    const { id } = (await (await postJson(`${base}/v1/sessions`, { ...lpt, mode })).json()) as { id: string };
    const events = await readSession(base, id);
    t.equal(ofType(events, "started")[0]?.mode, mode);
    t.same(new Set(ofType(events, "interrupt").map((i) => i.id)), new Set(["slow", "fast", "sum"]), `${mode}: every result delivered`);
    t.equal(ofType(events, "done")[0]?.reason, "eos", `${mode}: finished`);
  }
});

t.test("late readers get the whole history; Last-Event-ID resumes after it", async (t) => {
  const { id } = (await (await postJson(`${base}/v1/sessions`, { ...lpt, policy: { type: "text", pieces: ["Hi", " there"] } })).json()) as { id: string };
  const first = await readSession(base, id);
  t.equal(first[first.length - 1]?.type, "done");
  const again = await readSession(base, id);
  t.same(again, first, "a finished session replays every event");
  const resumed = await readSession(base, id, { headers: { "last-event-id": "0" } });
  t.same(resumed, first.slice(1), "resume after event 0");
});

t.test("a user interrupt posted mid-session reaches the model as an interrupt event", async (t) => {
  const request: CreateSessionRequest = {
    prompt: "Wait for the user.",
    tools: lpt.tools!,
    maxTokens: 400,
    policy: { type: "lpt-dag", calls: [{ id: "wait", tool: "sleep", arguments: { ms: 60000 }, dependsOn: [], estimatedLatencyMs: 60000 }] },
  };
  const { id } = (await (await postJson(`${base}/v1/sessions`, request)).json()) as { id: string };
  let posted: Response | undefined;
  const events = await readSession(base, id, {
    until: (e) => e.type === "interrupt" && e.kind === "user",
    onEvent: async (e) => {
      // The session is parked in a trap waiting for the 60 s call: only the user's input can wake it.
      if (e.type === "trap" && posted === undefined) {
        posted = await postJson(`${base}/v1/sessions/${id}/interrupts`, { id: "u1", value: "Also book a hotel." });
      }
    },
  });
  t.equal(posted?.status, 202);
  t.same(await posted?.json(), { id: "u1", sessionId: id, kind: "user" });
  const user = ofType(events, "interrupt").find((i) => i.id === "u1");
  t.ok(user, "the user's interrupt was injected");
  t.equal(user?.kind, "user");
  t.equal(user?.value, "Also book a hotel.");
  t.notOk(ofType(events, "done").length, "the session is still running");

  const del = await fetch(`${base}/v1/sessions/${id}`, { method: "DELETE" });
  t.equal(del.status, 200);
  const rest = await readSession(base, id);
  const done = ofType(rest, "done")[0];
  t.equal(done?.reason, "cancelled", "DELETE ends the session as cancelled");
  const late = await postJson(`${base}/v1/sessions/${id}/interrupts`, { value: "too late" });
  t.equal(late.status, 409, "a finished session takes no interrupts");
  t.equal(((await late.json()) as { error: { code: string } }).error.code, "session_finished");
});

t.test("interrupts beyond maxQueued are refused with 429 until some are read", async (t) => {
  // A sync session waiting on a long call reads interrupts only at its re-entry: they stay queued.
  const request: CreateSessionRequest = {
    prompt: "Wait.",
    tools: lpt.tools!,
    mode: "sync",
    maxTokens: 400,
    policy: { type: "lpt-dag", calls: [{ id: "wait", tool: "sleep", arguments: { ms: 60000 }, dependsOn: [], estimatedLatencyMs: 60000 }] },
  };
  const { id } = (await (await postJson(`${base}/v1/sessions`, request)).json()) as { id: string };
  const post = (n: number) => postJson(`${base}/v1/sessions/${id}/interrupts`, { id: `u${n}`, value: `note ${n}`, maxQueued: 2 });
  // Posted while the event stream is open (a reader that disconnects before done cancels the session).
  await readSession(base, id, {
    until: (e) => e.type === "call",
    onEvent: async (e) => {
      if (e.type !== "call") return;
      t.equal((await post(1)).status, 202);
      t.equal((await post(2)).status, 202);
      const refused = await post(3);
      t.equal(refused.status, 429, "a third one while two are queued");
      t.match(await refused.json(), { error: { code: "capacity", message: /already has 2 interrupts queued \(maxQueued\)/ } });
      t.equal(pod.engine.queuedInterrupts(id), 2, "the refused one was not queued");
      t.equal((await postJson(`${base}/v1/sessions/${id}/interrupts`, { id: "u4", value: "no bound" })).status, 202, "without maxQueued there is no bound here");
    },
  });
  await fetch(`${base}/v1/sessions/${id}`, { method: "DELETE" });
});

t.test("unknown sessions are 404 everywhere", async (t) => {
  for (const [method, path, body] of [
    ["GET", "/v1/sessions/nope/events", undefined],
    ["POST", "/v1/sessions/nope/interrupts", { value: "x" }],
    ["DELETE", "/v1/sessions/nope", undefined],
  ] as const) {
    const res = await fetch(`${base}${path}`, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    t.equal(res.status, 404, `${method} ${path}`);
    t.equal(((await res.json()) as { error: { code: string } }).error.code, "not_found");
  }
});

t.test("metrics reflect the sessions served", async (t) => {
  await waitFor("sessions to finish", () => pod.engine.stats().activeSessions === 0);
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const name of [
    "interlace_engine_ttft_seconds_count",
    "interlace_engine_tpot_seconds_count",
    "interlace_engine_tokens_decoded_total",
    "interlace_engine_tokens_prefilled_total",
    "interlace_engine_batch_size",
    "interlace_engine_kv_cells_used",
    "interlace_engine_interrupts_injected_total",
    "interlace_engine_interrupts_deferred_total",
    "interlace_engine_injection_delay_seconds_count",
    "interlace_engine_traps_total",
    "interlace_engine_active_sessions",
    "interlace_engine_http_requests_total",
  ]) {
    t.match(text, new RegExp(`^${name}`, "m"), name);
  }
  t.match(text, /^interlace_engine_tool_calls_total\{tool="calculator",outcome="ok"\} [1-9]/m, "tool calls by tool and outcome");
  t.match(text, /^interlace_engine_sessions_total\{mode="async",reason="cancelled"\} [1-9]/m);
  t.match(text, /^interlace_engine_tokens_decoded_total [1-9]/m, "decoded tokens counted from engine stats");
  t.match(text, /^interlace_engine_interrupts_injected_total\s+([4-9]|\d\d)/m, "interrupts injected counted");
});
