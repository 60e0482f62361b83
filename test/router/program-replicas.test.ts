/**
 * Programs across router replicas, on real processes: three router processes
 * (the entrypoint the chart runs) share a real nats-server, with a real
 * engine process on the generated `test` model (greedy: temperature 0).
 * - A program submitted to router A is read through router B: its status,
 *   its SSE events and a long-poll of its final value; an open program A
 *   runs takes calls, a get with its criterion and its close through B.
 * - DELETE through B cancels a program A runs: its running call's engine
 *   session ends, and both replicas report it cancelled, with the reason.
 * - Router A SIGKILLed mid-program: B or C (a third replica, competing for
 *   the claim) takes the program over once A's lease lapses, exactly one of
 *   them runs it, and it finishes, read through B, with the same outputs as
 *   an undisturbed run; the value A produced before dying is kept (not
 *   produced again).
 * - A router shut down normally (SIGTERM) mid-program releases its lease, so
 *   another replica resumes the program without waiting for the lease.
 */
import t from "tap";
import { connect } from "@nats-io/transport-node";
import { readEventStream } from "../../common/src/index.js";
import { appKey, engineKey, openAppsBucket, openEnginesBucket, type EngineHeartbeat } from "../../common/src/protocol/index.js";
import type { SemanticFunction } from "../../common/src/semantic-function.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { spawnRouter, type RouterProcess } from "../helpers/router-process.js";
import { eventually } from "../helpers/wait.js";
import { appConfig, POOL, postJson, SLEEP_TOOL, spawnPoolEngine } from "./fixtures.js";

t.setTimeout(600_000);

const LEASE_MS = 1500;
const nats = await startNatsServer(t);
const nc = await connect({ servers: nats.url });
t.teardown(() => nc.close());
const engine = "engine-a";
await spawnPoolEngine(t, nats.url, engine, ["--sequences", "4"]);

const FUNCTIONS: SemanticFunction[] = [
  { name: "draft", template: "Write one line about {{input:topic}}.\nLine: {{output:line}}", outputs: [{ name: "line", maxTokens: 8, temperature: 0 }], tools: false },
  { name: "wait_for", template: "Wait for {{input:job}}.\nStatus: {{output:status}}", outputs: [{ name: "status", maxTokens: 64, temperature: 0 }], tools: ["sleep"] },
  { name: "finish", template: "Combine {{input:a}} with {{input:b}}.\nResult: {{output:result}}", outputs: [{ name: "result", maxTokens: 8, temperature: 0 }], tools: false },
];
const apps = await openAppsBucket(nc);
await apps.put(appKey("default", "chain"), JSON.stringify(appConfig("chain", { tools: [SLEEP_TOOL], semanticFunctions: FUNCTIONS, callingMode: "sync" })));

/** draft → wait_for (a scripted sleep of `sleepMs`: sync calling, so its session holds until the sleep ends) → finish, reading both. */
function chain(sleepMs: number): Record<string, unknown> {
  const policy = { type: "lpt-dag", calls: [{ id: "w", tool: "sleep", arguments: { ms: sleepMs }, dependsOn: [] }], finalText: "ready" };
  return {
    inputs: { topic: "the harbour at dawn" },
    calls: [
      { id: "draft", function: "draft" },
      { id: "wait", function: "wait_for", inputs: { job: "line" }, policy },
      { id: "finish", function: "finish", inputs: { a: "line", b: "status" } },
    ],
  };
}

// The router processes: options by environment, as the chart passes them.
const env = { NATS_URL: nats.url, PROGRAM_LEASE_MS: String(LEASE_MS), ENGINE_TTL_MS: "3000" };
const routerA = await spawnRouter(t, ["--router-id", "router-a"], env);
const routerB = await spawnRouter(t, ["--router-id", "router-b"], env);
// A third replica competes with B for A's programs: the claim lets exactly one of them run it.
const routerC = await spawnRouter(t, ["--router-id", "router-c"], env);
const appPath = "/v1/apps/default/chain";

// Both replicas see the engine and the app before any subtest (no top-level assertion: tap would end the root test).
for (const router of [routerA, routerB, routerC]) {
  const metric = `interlace_router_engines{pool="default/${POOL}"} 1`;
  if (!(await eventually(async () => (await fetch(`${router.url}/metrics`).then((r) => r.text())).includes(metric), 30_000))) throw new Error(`${router.url} does not see the engine`);
}

interface ProgramEvent {
  type: "value" | "failed" | "done";
  variable?: string;
  value?: string;
  t: number;
  state?: string;
  reason?: string;
  error?: { code: string; call: string };
}

async function submit(router: RouterProcess, body: unknown): Promise<{ id: string; url: string; eventsUrl: string }> {
  const res = await postJson(`${router.url}${appPath}/programs`, body);
  if (res.status !== 201) throw new Error(`submit: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; url: string; eventsUrl: string };
}

/** Reads a program's SSE stream through `router` until `done` (or `until` says stop). */
async function events(router: RouterProcess, eventsUrl: string, until: (e: ProgramEvent) => boolean = () => false): Promise<ProgramEvent[]> {
  const controller = new AbortController();
  const res = await fetch(`${router.url}${eventsUrl}`, { headers: { accept: "text/event-stream" }, signal: controller.signal });
  if (!res.ok || res.body === null) throw new Error(`${eventsUrl} through ${router.url}: ${res.status} ${await res.text()}`);
  const out: ProgramEvent[] = [];
  try {
    for await (const e of readEventStream<ProgramEvent>(res.body)) {
      out.push(e);
      if (until(e)) break;
    }
  } finally {
    controller.abort();
  }
  return out;
}

function values(list: ProgramEvent[]): Record<string, string | undefined> {
  return Object.fromEntries(list.filter((e) => e.type === "value").map((e) => [e.variable!, e.value]));
}

let undisturbed: Record<string, string | undefined> = {};

t.test("a program submitted to router A is read through router B", async (t) => {
  const program = await submit(routerA, chain(3000));
  t.match(program.id, /^prog_[0-9a-f]{24}$/);
  const poll = fetch(`${routerB.url}${appPath}/variables/${program.id}.result?timeoutMs=60000`);
  const throughB = await events(routerB, program.eventsUrl);
  t.same(
    throughB.map((e) => [e.type, e.variable]),
    [
      ["value", "line"],
      ["value", "status"],
      ["value", "result"],
      ["done", undefined],
    ],
    "B streams every event of the program A runs, in order",
  );
  t.match(throughB.at(-1), { type: "done", state: "succeeded" });
  const polled = await poll;
  t.equal(polled.status, 200, "B's long-poll answers once A produced the value");
  t.match(await polled.json(), { name: "result", state: "ready", value: values(throughB)["result"] });
  const viewB = (await (await fetch(`${routerB.url}${program.url}`)).json()) as { state: string; calls: Record<string, { state: string; engine: string | null }> };
  t.match(viewB, { state: "succeeded", calls: { draft: { state: "done", engine }, wait: { state: "done", engine }, finish: { state: "done", engine } } }, "B's status view: every call done, on the engine that ran it");
  t.same(values(await events(routerA, program.eventsUrl)), values(throughB), "A and B tell the same values");
  undisturbed = values(throughB);
  t.ok(undisturbed["line"] && undisturbed["status"] && undisturbed["result"], "every value is non-empty");
});

t.test("DELETE through router B cancels a program router A runs, and its running call", async (t) => {
  const heartbeats = await openEnginesBucket(nc);
  const activeSessions = async (): Promise<number> => ((await heartbeats.get(engineKey({ namespace: "default", name: POOL }, engine)))?.json<EngineHeartbeat>().activeSessions ?? -1);
  t.ok(await eventually(async () => (await activeSessions()) === 0, 10_000), "the engine starts idle");
  const program = await submit(routerA, chain(120_000));
  // The wait call is on the engine, sleeping, once line's value exists.
  await events(routerB, program.eventsUrl, (e) => e.variable === "line");
  t.ok(await eventually(async () => (await activeSessions()) === 1, 10_000), "the wait call holds an engine session");
  const res = await fetch(`${routerB.url}${program.url}`, { method: "DELETE" });
  t.equal(res.status, 200);
  t.match(await res.json(), { id: program.id, state: "cancelled", cancelled: true, failed: ["status", "result"], reason: /cancelled by its client/ });
  t.ok(await eventually(async () => (await activeSessions()) === 0, 10_000), "the engine session of the running call ended");
  for (const router of [routerA, routerB]) {
    const view = (await (await fetch(`${router.url}${program.url}`)).json()) as Record<string, unknown>;
    t.match(view, { state: "cancelled", reason: /cancelled by its client \(DELETE\)/, variables: { line: { state: "ready" }, status: { state: "failed", error: { code: "cancelled", call: "wait" } } } }, `${router === routerA ? "A" : "B"} reports it cancelled, with the reason`);
  }
  const log = await events(routerB, program.eventsUrl);
  t.match(log.at(-1), { type: "done", state: "cancelled", reason: /cancelled by its client/ });
  t.match(await (await fetch(`${routerB.url}${program.url}`, { method: "DELETE" })).json(), { state: "cancelled", cancelled: false }, "DELETE again: already ended");
});

t.test("an open program A runs grows and is read through B", async (t) => {
  const created = await postJson(`${routerA.url}${appPath}/programs`, { open: true, inputs: { topic: "the harbour at dawn" } });
  t.equal(created.status, 201);
  const { id, url, callsUrl } = (await created.json()) as { id: string; url: string; callsUrl: string };
  const added = await postJson(`${routerB.url}${callsUrl}`, { calls: [{ id: "draft", function: "draft" }] });
  t.equal(added.status, 200, "B takes the call for the program A runs");
  t.match(await added.json(), { state: "open", variables: { line: { id: `${id}.line` } }, calls: [{ id: "draft", function: "draft" }] });
  // The get through B names the final output, which is what starts the call on A.
  const got = await fetch(`${routerB.url}${appPath}/variables/${id}.line?criteria=latency&timeoutMs=60000`);
  t.equal(got.status, 200);
  t.match(await got.json(), { state: "ready", value: undisturbed["line"], criteria: "latency" }, "the value the same call gave in the closed program");
  const closed = await postJson(`${routerB.url}${callsUrl}`, { close: true });
  t.equal(closed.status, 200);
  t.ok(await eventually(async () => ((await (await fetch(`${routerA.url}${url}`)).json()) as { state: string }).state === "succeeded", 10_000), "closed through B, A ends it");
  const late = await postJson(`${routerB.url}${callsUrl}`, { calls: [] });
  t.equal(late.status, 409, "an ended program takes no more calls, through either replica");
});

t.test("router A SIGKILLed mid-program: another replica takes it over and finishes it with the same outputs", async (t) => {
  const program = await submit(routerA, chain(3000));
  // A has produced `line` and runs the wait call when it dies.
  const before = await events(routerB, program.eventsUrl, (e) => e.variable === "line");
  t.match(before, [{ type: "value", variable: "line" }]);
  const running = (await (await fetch(`${routerB.url}${program.url}`)).json()) as { calls: Record<string, { state: string }> };
  t.equal(running.calls["wait"]?.state, "running", "A is in the middle of the wait call");
  await routerA.kill();
  const rest = await events(routerB, program.eventsUrl);
  t.match(rest.at(-1), { type: "done", state: "succeeded" }, "the program finished, read through B");
  t.same(values(rest), undisturbed, "the same outputs as the undisturbed run");
  t.same(
    rest.map((e) => e.variable ?? e.type),
    ["line", "status", "result", "done"],
    "each variable produced once: A's value was kept, the unfinished calls ran again",
  );
  t.same(rest[0], before[0], "the value A produced before it died, as it was");
  const view = (await (await fetch(`${routerB.url}${program.url}`)).json()) as Record<string, unknown>;
  t.match(view, { state: "succeeded", calls: { draft: { state: "done" }, wait: { state: "done" }, finish: { state: "done" } } });
  // Only the replica running a program counts it and sends its requests: B and C together ran it once.
  const count = async (pattern: RegExp): Promise<number> => {
    let sum = 0;
    for (const router of [routerB, routerC]) for (const m of (await (await fetch(`${router.url}/metrics`)).text()).matchAll(pattern)) sum += Number(m[1]);
    return sum;
  };
  t.equal(await count(/^interlace_router_programs_total\{outcome="succeeded"\} (\d+)$/gm), 1, "one replica took it over and ran it to its end");
  t.equal(await count(/^interlace_router_program_requests_total\{[^}]*\} (\d+)$/gm), 2, "the unfinished calls (wait, finish) were sent once, the finished one not again");
});

t.test("a router shut down mid-program gives its lease up: another replica resumes the program at once", async (t) => {
  const routerD = await spawnRouter(t, ["--router-id", "router-d", "--program-lease-ms", "60000"], env);
  const program = await submit(routerD, chain(3000));
  await events(routerB, program.eventsUrl, (e) => e.variable === "line");
  // SIGTERM, as a rollout does; with a one-minute lease, only the release lets B or C resume it before the wait below ends.
  await routerD.stop();
  const started = Date.now();
  const rest = await events(routerB, program.eventsUrl);
  t.match(rest.at(-1), { type: "done", state: "succeeded" }, "it finished");
  t.ok(Date.now() - started < 60_000, "before D's one-minute lease would have lapsed");
  t.same(values(rest), undisturbed, "the same outputs as the undisturbed run");
});
