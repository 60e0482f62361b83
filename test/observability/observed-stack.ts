/**
 * @module The stack the observability tests scrape: a real nats-server, a
 * tool runner process (the ToolPool pod entrypoint) serving the builtin
 * tools, an in-process engine pod on the generated `test` model whose tools
 * run on that runner over NATS, optionally a real operator (in-process, on a
 * real etcd + kube-apiserver, reconciling the sample ToolPool), optionally a
 * real router (in-process, placing on the engine by its heartbeats and
 * serving one AgentApp config), and a real Prometheus scraping all of them every
 * second with the `namespace`/`pod` target labels a ServiceMonitor adds in a
 * cluster. Everything stops at the test's teardown.
 */
import type { Test } from "tap";
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { createLogger, parseArgv, type CreateSessionRequest, type SessionEvent, type ToolSpec } from "../../common/src/index.js";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { parseEnginePodOptions } from "../../engine-pod/src/config.js";
import { startEnginePod, type EnginePod } from "../../engine-pod/src/main.js";
import { applyManifest, installCrds, startControlPlane, type KubeAccess, type Manifest } from "../../hack/control-plane.js";
import { NatsServer } from "../../hack/nats.js";
import { parseOperatorOptions } from "../../operator/src/config.js";
import { noopPoolCleanup } from "../../operator/src/controllers/index.js";
import { createOperator, type Operator } from "../../operator/src/main.js";
import { appKey, openAppsBucket, withAppDefaults } from "../../common/src/protocol/index.js";
import { routerOptions } from "../../router/src/config.js";
import { startRouter, type Router } from "../../router/src/index.js";
import { connect } from "@nats-io/transport-node";
import { startPrometheus, type Prometheus, type ScrapeTarget } from "../../hack/prometheus.js";
import { sampleToolPool, spawnToolRunner, type ToolRunnerProcess } from "../../hack/stack.js";
import { waitFor } from "../helpers/wait.js";

/** The `namespace` label every target gets (a ServiceMonitor adds the pod's namespace). */
export const NAMESPACE = "observability-test";
export const ENGINE_POD = "obs-engine";
export const RUNNER_ID = "obs-runner-0";

export interface ObservedStack {
  prom: Prometheus;
  engine: EnginePod;
  engineBase: string;
  runner: ToolRunnerProcess;
  /** The tool pool the runner serves. */
  pool: { namespace: string; name: string };
  /** With `operator: true`: the operator and the control plane's admin credentials. */
  operator?: Operator;
  kube?: KubeAccess;
  /** With `router: true`: the router's base URL (it serves `APP`). */
  routerBase?: string;
}

export interface ObservedStackOptions {
  /**
   * Also run the operator against a real control plane and let it reconcile
   * `samples/toolpool.yaml` before scraping starts (default false).
   */
  operator?: boolean;
  /**
   * Also run a router that places on the engine (the engine then publishes
   * heartbeats for an EnginePool) and serves one AgentApp (default false).
   */
  router?: boolean;
}

export const ROUTER_POD = "obs-router";
/** The EnginePool the engine heartbeats for, and the AgentApp the router serves, with `router: true`. */
export const ENGINE_POOL = { namespace: NAMESPACE, name: "obs-pool" };
export const APP = { namespace: NAMESPACE, name: "obs-app" };

export const OPERATOR_POD = "obs-operator";

/** Starts everything and waits until Prometheus scrapes every target successfully. */
export async function startObservedStack(t: Test, options: ObservedStackOptions = {}): Promise<ObservedStack> {
  const nats = await NatsServer.start();
  t.teardown(() => nats.stop());
  // Every party in the one namespace the targets are labelled with: a runner answers only into its own namespace.
  const config = sampleToolPool({ namespace: NAMESPACE });
  const pool = { namespace: config.namespace, name: config.pool };
  const runner = await spawnToolRunner(nats.url, config, RUNNER_ID);
  t.teardown(() => runner.stop());

  const engineOptions = parseEnginePodOptions({
    flags: parseArgv([
      "--model-preset", "test", "--port", "0", "--host", "127.0.0.1", "--sequences", "2", "--context-size", "2048", "--threads", "1",
      "--executor", "nats", "--nats-url", nats.url, "--pod-name", ENGINE_POD,
      ...(options.router === true ? ["--pool", `${ENGINE_POOL.namespace}/${ENGINE_POOL.name}`, "--heartbeat-ms", "250"] : []),
    ]),
    env: { POD_NAMESPACE: NAMESPACE },
  });
  const engine = await startEnginePod(engineOptions, createLogger("obs-engine", process.env["LOG_LEVEL"] ?? "warn"));
  t.teardown(() => engine.close());
  const engineBase = `http://127.0.0.1:${engine.port}`;

  const labels = (pod: string): Record<string, string> => ({ namespace: NAMESPACE, pod });
  const targets: ScrapeTarget[] = [
    { job: "engine", url: `${engineBase}/metrics`, labels: labels(ENGINE_POD) },
    { job: "toolrunner", url: `http://127.0.0.1:${runner.port}/metrics`, labels: labels(RUNNER_ID) },
  ];
  let operator: { operator: Operator; kube: KubeAccess } | undefined;
  if (options.operator === true) {
    operator = await startOperator(t);
    targets.push({ job: "operator", url: `http://127.0.0.1:${operator.operator.manager.probePort}/metrics`, labels: labels(OPERATOR_POD) });
  }
  let routerBase: string | undefined;
  if (options.router === true) {
    routerBase = `http://127.0.0.1:${(await startObservedRouter(t, nats.url, pool)).port}`;
    targets.push({ job: "router", url: `${routerBase}/metrics`, labels: labels(ROUTER_POD) });
  }
  const prom = await startPrometheus({ targets, scrapeIntervalMs: 1000 });
  t.teardown(() => prom.stop());
  await prom.waitForTargetsUp(30_000);
  return { prom, engine, engineBase, runner, pool, ...(operator !== undefined ? operator : {}), ...(routerBase !== undefined ? { routerBase } : {}) };
}

/**
 * A router on the stack's NATS serving `APP` (written where the operator
 * writes app configs), on the pool the engine heartbeats for; returns once
 * it sees the app and the engine.
 */
async function startObservedRouter(t: Test, natsUrl: string, pool: { namespace: string; name: string }): Promise<Router> {
  const nc = await connect({ servers: natsUrl });
  t.teardown(() => nc.close());
  const apps = await openAppsBucket(nc);
  const config = withAppDefaults({
    ...APP,
    enginePool: { name: ENGINE_POOL.name },
    systemPrompt: "You plan trips with the tools you have.",
    maxTokens: 400,
    tools: runnerTools(pool),
  });
  await apps.put(appKey(APP.namespace, APP.name), JSON.stringify(config));
  const router = await startRouter(
    routerOptions({ natsUrl, routerId: ROUTER_POD, logLevel: "silent" }),
    createLogger(ROUTER_POD, process.env["LOG_LEVEL"] ?? "warn"),
  );
  t.teardown(() => router.close());
  await waitFor(
    "the router to see its app and the engine",
    () => router.apps.get(APP.namespace, APP.name) !== undefined && router.engines.loads(ENGINE_POOL.namespace, ENGINE_POOL.name).length > 0,
    20_000,
  );
  return router;
}

/**
 * A control plane with the CRDs, the operator (admin credentials: RBAC is
 * the operator tests' concern) and the sample ToolPool and EnginePool
 * applied, so its reconcile and work-queue metrics have samples and the
 * children it builds (Services included) exist.
 */
async function startOperator(t: Test): Promise<{ operator: Operator; kube: KubeAccess }> {
  const cp = await startControlPlane();
  t.teardown(() => cp.stop());
  await installCrds(cp.kubeConfig);
  const opts = parseOperatorOptions({
    flags: parseArgv(["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--identity", OPERATOR_POD, "--log-level", "warn"]),
    env: {},
  });
  const operator = createOperator(opts, createLogger("obs-operator", process.env["LOG_LEVEL"] ?? "error"), { access: cp.kubeConfig, cleanup: noopPoolCleanup });
  t.teardown(() => operator.stop());
  await operator.start();
  for (const sample of ["toolpool.yaml", "enginepool.yaml"]) {
    const manifest = parse(readFileSync(new URL(`../../samples/${sample}`, import.meta.url), "utf8")) as Manifest;
    await applyManifest(cp.kubeConfig, manifest, { namespace: "default" });
  }
  return { operator, kube: cp.kubeConfig };
}

/** The builtin tools the stack's runner serves (all but `replay`), routed to its ToolPool. */
function runnerTools(pool: { namespace: string; name: string }): ToolSpec[] {
  return builtinToolSpecs()
    .filter((s) => s.name !== "replay")
    .map((s) => ({ ...s, pool }));
}

/**
 * A scripted async session whose three calls run on the tool runner: a slow
 * sleep (so the model traps waiting for it), an echo and a calculator call
 * that depends on the echo.
 */
export function sessionRequest(pool: { namespace: string; name: string }): CreateSessionRequest {
  return {
    prompt: "Plan a trip: weather and a sum.",
    tools: runnerTools(pool),
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
}

/** Creates a session and reads its events until `done`. */
export async function runSession(base: string, request: CreateSessionRequest): Promise<SessionEvent[]> {
  const created = await fetch(`${base}/v1/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) });
  if (created.status !== 201) throw new Error(`create session: HTTP ${created.status} ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const res = await fetch(`${base}/v1/sessions/${id}/events`, { headers: { accept: "text/event-stream" } });
  if (!res.ok || res.body === null) throw new Error(`events: HTTP ${res.status}`);
  // A minimal SSE reader: every event's `data:` line is one JSON SessionEvent.
  const events: SessionEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart())
        .join("\n");
      if (data === "" || data === "[DONE]") continue;
      const event = JSON.parse(data) as SessionEvent;
      events.push(event);
      if (event.type === "done") return events;
    }
  }
  return events;
}
