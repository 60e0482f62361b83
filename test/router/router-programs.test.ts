/**
 * Programs through the router against a real nats-server and two real engine
 * processes on the `test` model: a map-reduce program returns its handles at
 * once, runs as a DAG inside the router (the reduce starts from the maps'
 * values, no client round trip), delivers values to the SSE stream in the
 * order they are produced and to a long-poll the moment the final is ready;
 * the maps, one task group, run on one engine where the shared prefix is
 * filled once and forked (the engines' own prefill and fork counters); a
 * failing call fails its dependents with the cause; bad programs get 400 /
 * 404 / 413 naming what is wrong. An open program built call by call, with a
 * function defined in the request, runs nothing until a get names what it
 * needs; DELETE cancels it mid-call and the engines free the sequences.
 */
import t from "tap";
import { readEventStream } from "../../common/src/index.js";
import type { SemanticFunction } from "../../common/src/semantic-function.js";
import { eventually } from "../helpers/wait.js";
import { appConfig, postJson, SLEEP_TOOL, startStack } from "./fixtures.js";

t.setTimeout(240_000);

const stack = await startStack(t, { engines: 2, routers: 1, engineArgs: ["--sequences", "5"], router: { maxVariableBytes: 16_384 } });
const r0 = stack.url(0);

const FUNCTIONS: SemanticFunction[] = [
  {
    name: "summarize",
    template: "Summarize this part of the quarterly report in one sentence, keeping every name and figure it mentions.\n\nPart:\n{{input:chunk}}\n\nSummary: {{output:summary}}",
    outputs: [{ name: "summary", maxTokens: 6, temperature: 0 }],
    tools: false,
  },
  {
    name: "combine",
    template: "Combine these summaries into one paragraph.\n\n{{input:summaries}}\n\nParagraph: {{output:paragraph}}",
    outputs: [{ name: "paragraph", maxTokens: 6, temperature: 0 }],
    tools: false,
  },
];
await stack.putApp(appConfig("reports", { tools: [], semanticFunctions: FUNCTIONS, objective: "latency" }));
await stack.putApp(appConfig("waits", { tools: [SLEEP_TOOL], semanticFunctions: [] }));

interface ProgramEvent {
  type: "value" | "failed" | "done";
  variable?: string;
  value?: string;
  error?: { code: string; message: string; call: string; variable?: string };
  state?: string;
  failed?: string[];
}

async function events(url: string): Promise<{ id: string; e: ProgramEvent }[]> {
  const res = await fetch(`${r0}${url}`, { headers: { accept: "text/event-stream" } });
  if (!res.ok || res.body === null) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const out: { id: string; e: ProgramEvent }[] = [];
  for await (const e of readEventStream<ProgramEvent>(res.body)) out.push({ id: String(out.length), e });
  return out;
}

async function engineCounters(): Promise<Map<string, { prefilled: number; forks: number }>> {
  const out = new Map<string, { prefilled: number; forks: number }>();
  for (const [pod, engine] of stack.engines) {
    const text = await (await fetch(`${engine.url}/metrics`)).text();
    const read = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? "0");
    out.set(pod, { prefilled: read("interlace_engine_tokens_prefilled_total"), forks: read("interlace_engine_prefix_forks_total") });
  }
  return out;
}

const CHUNKS = [
  "Revenue rose to 4.2 million in the north region, led by Ada Berg's team.",
  "Costs in the south fell by 8 percent after the warehouse in Lund closed.",
  "The east office hired 12 engineers; Omar Nasser now leads the platform group.",
  "Cash reserves stand at 9.1 million; the board approved a 0.3 dividend.",
];

function mapReduce(): Record<string, unknown> {
  return {
    inputs: Object.fromEntries(CHUNKS.map((c, i) => [`chunk${i}`, c])),
    calls: [
      ...CHUNKS.map((_, i) => ({ id: `map${i}`, function: "summarize", inputs: { chunk: `chunk${i}` }, outputs: { summary: `s${i}` } })),
      { id: "reduce", function: "combine", inputs: { summaries: CHUNKS.map((_, i) => `s${i}`) }, outputs: { paragraph: "final" } },
    ],
    outputs: { final: "latency" },
  };
}

t.test("a map-reduce program: handles at once, values in order, maps as one task group forking one filled prefix", async (t) => {
  const before = await engineCounters();
  const res = await postJson(`${r0}/v1/apps/default/reports/programs`, mapReduce());
  t.equal(res.status, 201, "accepted at once");
  const created = (await res.json()) as {
    id: string;
    eventsUrl: string;
    url: string;
    variables: Record<string, { id: string; url: string }>;
    calls: { id: string; objective: string; group?: string; groupSize?: number; priority: number }[];
  };
  t.same(Object.keys(created.variables).sort(), ["final", "s0", "s1", "s2", "s3"], "a handle per produced variable");
  const byId = new Map(created.calls.map((c) => [c.id, c]));
  for (let i = 0; i < 4; i++) t.match(byId.get(`map${i}`), { objective: "task-group", group: "stage-1", groupSize: 4, priority: 1 }, `map${i} deduced into the task group`);
  t.match(byId.get("reduce"), { objective: "latency", priority: 2 }, "the reduce is latency-critical");

  // Long-poll the final and stream the events at the same time.
  const poll = fetch(`${r0}${created.variables["final"]!.url}?timeoutMs=120000&criteria=latency`).then(async (r) => ({ status: r.status, body: (await r.json()) as { state: string; value?: string } }));
  const stream = await events(created.eventsUrl);
  const values = stream.filter((x) => x.e.type === "value");
  t.same(values.map((x) => x.e.variable).slice(0, 4).sort(), ["s0", "s1", "s2", "s3"], "the four summaries first");
  t.equal(values.at(-1)?.e.variable, "final", "the final after every summary it reads");
  t.equal(stream.at(-1)?.e.type, "done");
  t.equal(stream.at(-1)?.e.state, "succeeded");
  const polled = await poll;
  t.equal(polled.status, 200);
  t.equal(polled.body.state, "ready");
  t.equal(polled.body.value, values.at(-1)?.e.value, "long-poll and stream carry the same value");

  // Replay: a late client gets the same events; Last-Event-ID resumes after an event.
  const replay = await events(created.eventsUrl);
  t.same(replay.map((x) => x.e.variable ?? x.e.type), stream.map((x) => x.e.variable ?? x.e.type), "replayed in the same order");
  const resumed = await fetch(`${r0}${created.eventsUrl}`, { headers: { "Last-Event-ID": "2" } });
  const rest: ProgramEvent[] = [];
  for await (const e of readEventStream<ProgramEvent>(resumed.body!)) rest.push(e);
  t.same(rest.map((e) => e.variable ?? e.type), stream.slice(3).map((x) => x.e.variable ?? x.e.type), "resumed after event 2");

  const status = (await (await fetch(`${r0}${created.url}`)).json()) as {
    state: string;
    calls: Record<string, { engine: string; usage: { promptTokens: number; prefilledTokens: number } }>;
  };
  t.equal(status.state, "succeeded");
  const maps = [0, 1, 2, 3].map((i) => status.calls[`map${i}`]!);
  const pod = maps[0]!.engine;
  t.ok(maps.every((m) => m.engine === pod), `the task group ran on one engine (${maps.map((m) => m.engine).join(", ")})`);
  const byFill = [...maps].sort((a, b) => b.usage.prefilledTokens - a.usage.prefilledTokens);
  t.equal(byFill[0]!.usage.prefilledTokens, byFill[0]!.usage.promptTokens, "one map filled its whole prompt (the shared prefix, once)");
  for (const m of byFill.slice(1)) {
    t.ok(m.usage.prefilledTokens <= m.usage.promptTokens - 16, `a sibling prefilled ${m.usage.prefilledTokens} of ${m.usage.promptTokens} prompt tokens: the rest was forked`);
  }
  const after = await engineCounters();
  const forks = after.get(pod)!.forks - before.get(pod)!.forks;
  // A sibling admitted after the first map finished may take its idle slot and keep the prefix in
  // place instead of forking it (the usage checks above cover both); the others fork.
  t.ok(forks >= 2, `the engine forked the prefix for the siblings (${forks} forks)`);
  const engineFilled = [...after].reduce((n, [p, c]) => n + c.prefilled - before.get(p)!.prefilled, 0);
  const callsFilled = Object.values(status.calls).reduce((n, c) => n + c.usage.prefilledTokens, 0);
  t.equal(engineFilled, callsFilled, "the engines' prefill counters agree with the calls' usage");

  const metrics = await (await fetch(`${r0}/metrics`)).text();
  t.match(metrics, /interlace_router_programs_total\{outcome="succeeded"\} 1/);
  t.match(metrics, /interlace_router_program_requests_total\{objective="task-group"\} 4/);
  t.match(metrics, /interlace_router_program_requests_total\{objective="latency"\} 1/);
  t.match(metrics, /interlace_router_task_group_size_count 1/);
  t.match(metrics, /interlace_router_program_prompt_tokens_total\{kind="forked"\} [1-9]/);
  t.match(metrics, /interlace_router_program_seconds_count 1/);
});

t.test("a failing call fails its dependents with the cause; the rest runs", async (t) => {
  const huge = Array.from({ length: 2400 }, (_, i) => `word${i}`).join(" ").slice(0, 16_000);
  const res = await postJson(`${r0}/v1/apps/default/reports/programs`, {
    inputs: { big: huge, ok: CHUNKS[0] },
    calls: [
      { id: "tooLong", function: "summarize", inputs: { chunk: "big" }, outputs: { summary: "x" } },
      { id: "after", function: "summarize", inputs: { chunk: "x" }, outputs: { summary: "y" } },
      { id: "fine", function: "summarize", inputs: { chunk: "ok" }, outputs: { summary: "z" } },
    ],
  });
  t.equal(res.status, 201);
  const created = (await res.json()) as { eventsUrl: string; variables: Record<string, { url: string }> };
  const stream = (await events(created.eventsUrl)).map((x) => x.e);
  const x = stream.find((e) => e.variable === "x");
  const y = stream.find((e) => e.variable === "y");
  t.equal(x?.type, "failed");
  t.equal(x?.error?.code, "context_overflow", "the engine's reason");
  t.equal(x?.error?.call, "tooLong");
  t.equal(y?.type, "failed", "the dependent failed too");
  t.equal(y?.error?.code, "dependency_failed");
  t.equal(y?.error?.variable, "x", "naming the failed input");
  t.equal(y?.error?.call, "tooLong", "and the call where it started");
  t.ok(stream.indexOf(x!) < stream.indexOf(y!), "cause before effect");
  t.equal(stream.find((e) => e.variable === "z")?.type, "value", "the independent call still ran");
  t.match(stream.at(-1), { type: "done", state: "failed", failed: ["x", "y"] });
  const polled = (await (await fetch(`${r0}${created.variables["y"]!.url}`)).json()) as { state: string; error: { code: string } };
  t.equal(polled.state, "failed");
  t.equal(polled.error.code, "dependency_failed");
});

t.test("bad programs are refused with the reason", async (t) => {
  const post = async (body: unknown): Promise<{ status: number; message: string }> => {
    const r = await postJson(`${r0}/v1/apps/default/reports/programs`, body);
    return { status: r.status, message: ((await r.json()) as { error: { message: string } }).error.message };
  };
  const cycle = await post({
    inputs: {},
    calls: [
      { id: "a", function: "summarize", inputs: { chunk: "q" }, outputs: { summary: "p" } },
      { id: "b", function: "summarize", inputs: { chunk: "p" }, outputs: { summary: "q" } },
    ],
  });
  t.equal(cycle.status, 400);
  t.match(cycle.message, /cycle through variables "[pq]" → "[pq]"/, "the cycle's variables named");
  const unknownFn = await post({ calls: [{ function: "translate", inputs: {}, outputs: {} }] });
  t.equal(unknownFn.status, 400);
  t.match(unknownFn.message, /no semantic function "translate".*summarize, combine/);
  const unknownVar = await post({ calls: [{ id: "a", function: "summarize", inputs: { chunk: "nowhere" } }] });
  t.equal(unknownVar.status, 400);
  t.match(unknownVar.message, /call "a" reads variable "nowhere"/);
  const badInput = await post({ inputs: { c: "x" }, calls: [{ function: "summarize", inputs: { text: "c" } }] });
  t.equal(badInput.status, 400);
  t.match(badInput.message, /calls\[0\]\.inputs\.text: function summarize has no \{\{input:text\}\}/);
  const big = await post({ inputs: { chunk: "x".repeat(20_000) }, calls: [{ function: "summarize" }] });
  t.equal(big.status, 413);
  t.match(big.message, /inputs\.chunk is 20000 bytes; a variable holds at most 16384/);
  t.equal((await fetch(`${r0}/v1/apps/default/reports/programs/router-0~000000000000`)).status, 404);
  t.equal((await fetch(`${r0}/v1/apps/default/nope/programs`, { method: "POST", body: "{}" })).status, 404, "unknown app");
  const other = await fetch(`${r0}/v1/apps/default/reports/variables/prog_0123456789abcdef01234567.final`);
  t.equal(other.status, 404);
  t.match(((await other.json()) as { error: { message: string } }).error.message, /no program "prog_0123456789abcdef01234567"/);
});

t.test("an open program: calls wait for a get; DELETE cancels the running call and frees its engine", async (t) => {
  const app = `${r0}/v1/apps/default/waits`;
  const idle = (): boolean => stack.routers[0]!.engines.loads("default", "pool").every((e) => e.load === 0 && e.free === e.capacity);
  t.ok(await eventually(idle, 10_000), "the engines start idle");
  const created = await postJson(`${app}/programs`, { open: true, inputs: { job: "nightly report" } });
  t.equal(created.status, 201);
  const { url, callsUrl, eventsUrl, state } = (await created.json()) as { url: string; callsUrl: string; eventsUrl: string; state: string };
  t.equal(state, "open");
  // A function defined in the request, using the app's sleep tool: its call waits on a one-minute sleep.
  const waitFn = { name: "wait_for", template: "Wait for {{input:job}}.\nStatus: {{output:status}}", outputs: [{ name: "status", maxTokens: 64 }], tools: ["sleep"] };
  const policy = { type: "lpt-dag", calls: [{ id: "w", tool: "sleep", arguments: { ms: 60_000 }, dependsOn: [] }], finalText: "done" };
  const added = await postJson(`${r0}${callsUrl}`, { functions: [waitFn], calls: [{ id: "slow", function: "wait_for", policy }, { id: "after", function: "wait_for", inputs: { job: "status" }, outputs: { status: "final" }, policy }] });
  t.equal(added.status, 200, await added.clone().text());
  t.match(await added.json(), { state: "open", variables: { status: {}, final: {} }, calls: [{ id: "slow", function: "wait_for" }, { id: "after" }] });
  type View = { state: string; calls: Record<string, { state: string }> };
  const view = async (): Promise<View> => (await (await fetch(`${r0}${url}`)).json()) as View;
  t.same(Object.values((await view()).calls).map((c) => c.state), ["waiting", "waiting"], "nothing runs before a get");
  // A get (it answers 202 pending at once) activates what "status" needs.
  const pending = await fetch(`${app}/variables/${encodeURIComponent(`${url.split("/").at(-1)!}.status`)}?timeoutMs=0&criteria=latency`);
  t.equal(pending.status, 202);
  t.ok(await eventually(async () => (await view()).calls["slow"]?.state === "running" && !idle(), 10_000), "the get started the call; an engine sequence is busy");
  t.equal((await view()).calls["after"]?.state, "waiting", "its dependent waits for its value");
  const cancelled = await fetch(`${r0}${url}`, { method: "DELETE" });
  t.equal(cancelled.status, 200);
  t.match(await cancelled.json(), { state: "cancelled", cancelled: true, failed: ["status", "final"] });
  t.ok(await eventually(idle, 10_000), "the engine session ended and its sequence is free");
  const events = await events_(eventsUrl);
  t.match(events.at(-1), { type: "done", state: "cancelled" });
  t.match(events.find((e) => e.variable === "status"), { type: "failed", error: { code: "cancelled", call: "slow" } });
  const late = await postJson(`${r0}${callsUrl}`, { calls: [] });
  t.equal(late.status, 409, "a cancelled program takes no more calls");
  t.match(await late.json(), { error: { code: "program_closed" } });
  t.match(await (await fetch(`${r0}${url}`, { method: "DELETE" })).json(), { state: "cancelled", cancelled: false }, "DELETE again: already ended");
  t.match(await (await fetch(`${r0}/metrics`)).text(), /interlace_router_programs_total\{outcome="cancelled"\} 1/);
});

async function events_(url: string): Promise<ProgramEvent[]> {
  return (await events(url)).map((x) => x.e);
}
