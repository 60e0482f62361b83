/**
 * @module The real-cluster steps of the joint autoscaler (called from
 * cluster.test.ts once the samples run): an EnginePool at zero serves the
 * first request after a cold start within the router's hold (the measured
 * cold-start time is printed); a ToolPool at zero in builtin mode is woken by
 * the first tool call, scales up under a tool backlog and back down after its
 * (short) stabilisation window, with every session started before the
 * scale-down finishing; a ToolPool in external mode under the same backlog
 * keeps its replicas. The operator's autoscaler ticks every 10 s (its
 * default); the windows here are short to keep the added time small.
 */
import type { Test } from "tap";
import type { Cluster } from "../../hack/cluster.js";
import { APP_NS, listPods } from "../../hack/cluster-interlace.js";
import { applyManifest, kubeRequest, type Manifest } from "../../hack/control-plane.js";
import { readEventStream } from "../../common/src/session-client.js";

export interface AutoscalingStepsContext {
  /** The router's base URL and the client API key's header. */
  router: string;
  auth: Record<string, string>;
  /** The sample EnginePool whose model and runtime the cold-start pool copies. */
  enginePool: string;
}

type Json = Record<string, unknown>;
interface AutoscalingStatus {
  desiredReplicas?: number;
  lastDirection?: string;
  lastReason?: string;
}
interface Pool {
  spec: Json & { replicas?: number };
  status?: { autoscaling?: AutoscalingStatus; readyReplicas?: number };
}

const API = "/apis/interlace.dev/v1alpha1";
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function getPool(cluster: Cluster, plural: "enginepools" | "toolpools", name: string): Promise<Pool> {
  const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `${API}/namespaces/${APP_NS}/${plural}/${name}`);
  if (res.status !== 200) throw new Error(`GET ${plural}/${name}: ${res.status}`);
  return res.body as Pool;
}

/** Polls `check` every second until it returns a value, or throws naming `what`. */
async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(1000);
  }
}

async function scaleEvents(cluster: Cluster, kind: string, name: string): Promise<{ reason: string; message: string }[]> {
  const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `/api/v1/namespaces/${APP_NS}/events`);
  const items = ((res.body as { items?: (Json & { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } })[] }).items ?? []);
  return items
    .filter((e) => e.involvedObject?.kind === kind && e.involvedObject.name === name && (e.reason === "ScaledUp" || e.reason === "ScaledDown"))
    .map((e) => ({ reason: e.reason ?? "", message: e.message ?? "" }));
}

const sleepTool = (name: string): Json => ({
  name,
  description: "Waits for the given number of milliseconds, then reports it.",
  parameters: { type: "object", properties: { ms: { type: "integer", minimum: 0, maximum: 60000 } }, required: ["ms"] },
  estimatedLatencyMs: 2000,
  idempotent: true,
  builtin: { name: "sleep" },
});

/** A session through the router: its POST's status and time to the 201, then its events to the end. */
async function session(ctx: AutoscalingStepsContext, app: string, body: Json): Promise<{ engine: string; placedMs: number; events: Json[] }> {
  const started = Date.now();
  const res = await fetch(`${ctx.router}/v1/apps/${APP_NS}/${app}/sessions`, { method: "POST", headers: { "content-type": "application/json", ...ctx.auth }, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`POST ${app} sessions: ${res.status} ${await res.text()}`);
  const placedMs = Date.now() - started;
  const opened = (await res.json()) as { engine: string; eventsUrl: string };
  const stream = await fetch(`${ctx.router}${opened.eventsUrl}`, { headers: ctx.auth, signal: AbortSignal.timeout(240_000) });
  if (stream.body === null) throw new Error("no event stream");
  const events: Json[] = [];
  for await (const e of readEventStream<Json>(stream.body)) events.push(e);
  return { engine: opened.engine, placedMs, events };
}

const finished = (events: Json[]): boolean => events.at(-1)?.["type"] === "done" && events.at(-1)?.["reason"] === "eos";
const toolResults = (events: Json[], id: string): Json[] => events.filter((e) => e["type"] === "interrupt" && e["id"] === id);

export async function autoscalingSteps(t: Test, cluster: Cluster, ctx: AutoscalingStepsContext): Promise<void> {
  const kc = cluster.cp.kubeConfig;
  const apply = (m: Manifest): Promise<unknown> => applyManifest(kc, m, { namespace: APP_NS, fieldManager: "kubectl" });
  const sample = await getPool(cluster, "enginepools", ctx.enginePool);

  // 1. An EnginePool at zero: the first request is held by the router while the autoscaler wakes the pool.
  let mark = Date.now();
  {
    await apply({
      apiVersion: "interlace.dev/v1alpha1",
      kind: "EnginePool",
      metadata: { name: "cold-engine", namespace: APP_NS },
      spec: {
        model: sample.spec["model"],
        runtime: sample.spec["runtime"],
        resources: { cpu: "100m", memory: "1Gi" },
        replicas: 0,
        drainGraceSeconds: 5,
        autoscaling: { minReplicas: 0, maxReplicas: 1, scaleDownStabilizationSeconds: 3600, idleSecondsBeforeZero: 3600 },
      },
    });
    await apply({ apiVersion: "interlace.dev/v1alpha1", kind: "AgentApp", metadata: { name: "cold-app", namespace: APP_NS }, spec: { enginePool: { name: "cold-engine" }, systemPrompt: "You help.", maxTokens: 32 } });
    await until("the router to serve cold-app", 60_000, async () => ((await fetch(`${ctx.router}/v1/apps/${APP_NS}/cold-app`, { headers: ctx.auth })).status === 200 ? true : undefined));
    t.equal((await listPods(cluster, APP_NS, "app.kubernetes.io/instance=cold-engine")).length, 0, "the EnginePool at zero has no pod");
    const first = await session(ctx, "cold-app", { prompt: "Say hi.", policy: { type: "text", pieces: ["Hi", " there."] } });
    t.ok(finished(first.events), "the first request to the pool at zero was served to its end", { last: first.events.at(-1) });
    t.comment(`cold start (EnginePool at zero → first request placed, through the router's hold): ${(first.placedMs / 1000).toFixed(1)} s`);
    t.ok(first.placedMs < 60_000, `within the router's 60 s cold-start hold (${(first.placedMs / 1000).toFixed(1)} s)`);
    const woken = await getPool(cluster, "enginepools", "cold-engine");
    t.match(woken.status?.autoscaling?.lastReason ?? "", /^woke EnginePool cold-engine 0→1: \d+ requests? held by the router/, "status says the held request woke it");
    // Done with it: its pod's CPU and memory go back to the node.
    await kubeRequest(kc, "DELETE", `${API}/namespaces/${APP_NS}/agentapps/cold-app`);
    await kubeRequest(kc, "DELETE", `${API}/namespaces/${APP_NS}/enginepools/cold-engine`);
  }
  t.comment(`autoscaling, engines from zero: ${((Date.now() - mark) / 1000).toFixed(1)}s`);

  // 2. A tool backlog: the builtin pool (at zero, woken by the first call) grows; the external one is left alone.
  mark = Date.now();
  {
    await apply({
      apiVersion: "interlace.dev/v1alpha1",
      kind: "ToolPool",
      metadata: { name: "auto-tools", namespace: APP_NS },
      spec: { replicas: 0, concurrency: 1, timeoutMs: 60000, tools: [sleepTool("wait_auto")], autoscaling: { minReplicas: 0, maxReplicas: 3, scaleDownStabilizationSeconds: 15, idleSecondsBeforeZero: 3600 } },
    });
    await apply({
      apiVersion: "interlace.dev/v1alpha1",
      kind: "ToolPool",
      metadata: { name: "manual-tools", namespace: APP_NS },
      spec: { replicas: 1, concurrency: 1, timeoutMs: 60000, tools: [sleepTool("wait_manual")], autoscaling: { mode: "external", minReplicas: 1, maxReplicas: 3 } },
    });
    await apply({
      apiVersion: "interlace.dev/v1alpha1",
      kind: "AgentApp",
      metadata: { name: "scaled-app", namespace: APP_NS },
      spec: { enginePool: { name: ctx.enginePool }, toolPools: [{ name: "auto-tools" }, { name: "manual-tools" }], systemPrompt: "You run jobs.", maxTokens: 512 },
    });
    await until("the router to serve scaled-app", 60_000, async () => ((await fetch(`${ctx.router}/v1/apps/${APP_NS}/scaled-app`, { headers: ctx.auth })).status === 200 ? true : undefined));
    await until("the manual pool's runner Ready", 180_000, async () => ((await getPool(cluster, "toolpools", "manual-tools")).status?.readyReplicas === 1 ? true : undefined));

    // Four sessions at once, each with a 6 s call to the builtin pool and a 1 s one to the external pool: a backlog of 4 calls on each.
    const calls = (n: number): Json => ({
      prompt: `Run job ${n}.`,
      policy: {
        type: "lpt-dag",
        calls: [
          { id: "a", tool: "wait_auto", arguments: { ms: 6000 } },
          { id: "m", tool: "wait_manual", arguments: { ms: 1000 } },
        ],
        finalText: " done",
      },
    });
    const burst = await Promise.all([1, 2, 3, 4].map((n) => session(ctx, "scaled-app", calls(n))));
    t.ok(
      burst.every((s) => finished(s.events) && toolResults(s.events, "a").length === 1 && toolResults(s.events, "m").length === 1),
      "every session of the burst finished with both results, the first call to the pool at zero included",
      { last: burst.map((s) => s.events.at(-1)) },
    );
    // How long the first calls waited for the pool at zero: from their call to their result, on the session's clock.
    const waits = burst.map((s) => {
      const at = (type: string): number => Number(s.events.find((e) => e["type"] === type && (e["callId"] === "a" || e["id"] === "a"))?.["t"] ?? Number.NaN);
      return at("interrupt") - at("call");
    });
    t.comment(`cold start (ToolPool at zero → first call answered, a 6 s sleep included): ${(Math.max(...waits) / 1000).toFixed(1)} s at most, ${(Math.min(...waits) / 1000).toFixed(1)} s at least`);
    const ups = (await scaleEvents(cluster, "ToolPool", "auto-tools")).filter((e) => e.reason === "ScaledUp");
    t.ok(ups.some((e) => /^woke ToolPool auto-tools 0→\d: \d+ calls? pending/.test(e.message)), "the first calls woke the pool at zero", { events: ups });
    const peak = Math.max(0, ...ups.map((e) => Number(/→(\d+)/.exec(e.message)?.[1] ?? 0)));
    t.ok(peak >= 2, `the backlog grew the builtin pool to ${peak} (${ups.map((e) => e.message).join("; ")})`);
    t.comment(`ToolPool auto-tools scale-ups: ${ups.map((e) => e.message).join("; ")}`);
    const manual = await getPool(cluster, "toolpools", "manual-tools");
    t.equal(manual.spec.replicas, 1, "external mode: the same backlog left its replicas alone");
    t.equal(manual.status?.autoscaling, undefined, "and wrote no decision");
    t.same(await scaleEvents(cluster, "ToolPool", "manual-tools"), [], "and no scale event");
  }
  t.comment(`autoscaling, tool backlog: ${((Date.now() - mark) / 1000).toFixed(1)}s`);

  // 3. The backlog gone: after its 15 s window the pool shrinks, while a session started at the burst's end (before any
  // scale-down: the window counts from the backlog's last tick) still runs its call; it finishes.
  mark = Date.now();
  {
    // 20 s: it runs through the scale-down, and still fits a removed runner's 25 s drain.
    const long = session(ctx, "scaled-app", { prompt: "One long job.", policy: { type: "lpt-dag", calls: [{ id: "long", tool: "wait_auto", arguments: { ms: 20000 } }], finalText: " done" } });
    const shrunk = await until("the builtin pool to scale down", 120_000, async () => {
      const p = await getPool(cluster, "toolpools", "auto-tools");
      // The status of the decision that wrote 1: spec.replicas is written before status, and a descent may take two steps (3→2→1).
      return p.status?.autoscaling?.lastDirection === "down" && p.status.autoscaling.desiredReplicas === 1 && p.spec.replicas === 1 ? p : undefined;
    });
    t.match(shrunk.status?.autoscaling?.lastReason ?? "", /^scaled ToolPool auto-tools \d→1: ([\d.]+ calls\/s × [\d.]+ s per call at \d+% target, )?0 calls pending, [01] running \(1 per runner\), (p90 tool wait [\d.]+ s, )?at most [01] runners? wanted over the last 15 s$/, "down to one runner, after the window");
    const last = await long;
    t.ok(finished(last.events), "the session started before the scale-down finished", { last: last.events.at(-1) });
    t.equal(toolResults(last.events, "long").length, 1, "with its call's result, once");
    const downs = (await scaleEvents(cluster, "ToolPool", "auto-tools")).filter((e) => e.reason === "ScaledDown");
    t.ok(downs.length > 0, "a ScaledDown Event");
    t.comment(`ToolPool auto-tools scale-downs: ${downs.map((e) => e.message).join("; ")}`);
    for (const [plural, name] of [["agentapps", "scaled-app"], ["toolpools", "auto-tools"], ["toolpools", "manual-tools"]] as const) await kubeRequest(kc, "DELETE", `${API}/namespaces/${APP_NS}/${plural}/${name}`);
  }
  t.comment(`autoscaling, scale-down: ${((Date.now() - mark) / 1000).toFixed(1)}s`);
}
