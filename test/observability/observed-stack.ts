/**
 * @module The stack the observability tests scrape: a real nats-server, a
 * tool runner process (the ToolPool pod entrypoint) serving the builtin
 * tools, an in-process engine pod on the generated `test` model whose tools
 * run on that runner over NATS, optionally an extra `/metrics` endpoint (the
 * operator's registry), and a real Prometheus scraping all of them every
 * second with the `namespace`/`pod` target labels a ServiceMonitor adds in a
 * cluster. Everything stops at the test's teardown.
 */
import type { Test } from "tap";
import type { Registry } from "prom-client";
import { createLogger, parseArgv, serveProbes, type CreateSessionRequest, type SessionEvent } from "../../common/src/index.js";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { parseEnginePodOptions } from "../../engine-pod/src/config.js";
import { startEnginePod, type EnginePod } from "../../engine-pod/src/main.js";
import { NatsServer } from "../../hack/nats.js";
import { startPrometheus, type Prometheus, type ScrapeTarget } from "../../hack/prometheus.js";
import { sampleToolPool, spawnToolRunner, type ToolRunnerProcess } from "../../hack/stack.js";

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
}

export interface ObservedStackOptions {
  /** More registries to serve on their own `/metrics` endpoint and scrape, by job name. */
  extraRegistries?: Record<string, Registry>;
}

/** Starts everything and waits until Prometheus scrapes every target successfully. */
export async function startObservedStack(t: Test, options: ObservedStackOptions = {}): Promise<ObservedStack> {
  const nats = await NatsServer.start();
  t.teardown(() => nats.stop());
  const config = sampleToolPool();
  const pool = { namespace: config.namespace, name: config.pool };
  const runner = await spawnToolRunner(nats.url, config, RUNNER_ID);
  t.teardown(() => runner.stop());

  const engineOptions = parseEnginePodOptions({
    flags: parseArgv([
      "--model-preset", "test", "--port", "0", "--host", "127.0.0.1", "--sequences", "2", "--context-size", "2048", "--threads", "1",
      "--executor", "nats", "--nats-url", nats.url, "--pod-name", ENGINE_POD,
    ]),
    env: {},
  });
  const engine = await startEnginePod(engineOptions, createLogger("obs-engine", process.env["LOG_LEVEL"] ?? "warn"));
  t.teardown(() => engine.close());
  const engineBase = `http://127.0.0.1:${engine.port}`;

  const labels = (pod: string): Record<string, string> => ({ namespace: NAMESPACE, pod });
  const targets: ScrapeTarget[] = [
    { job: "engine", url: `${engineBase}/metrics`, labels: labels(ENGINE_POD) },
    { job: "toolrunner", url: `http://127.0.0.1:${runner.port}/metrics`, labels: labels(RUNNER_ID) },
  ];
  for (const [job, registry] of Object.entries(options.extraRegistries ?? {})) {
    const { server, port } = await serveProbes(0, { registry, notReadyReason: () => null }, "127.0.0.1");
    t.teardown(() => new Promise<void>((r) => server.close(() => r())));
    targets.push({ job, url: `http://127.0.0.1:${port}/metrics`, labels: labels(`obs-${job}`) });
  }
  const prom = await startPrometheus({ targets, scrapeIntervalMs: 1000 });
  t.teardown(() => prom.stop());
  await prom.waitForTargetsUp(30_000);
  return { prom, engine, engineBase, runner, pool };
}

/**
 * A scripted async session whose three calls run on the tool runner: a slow
 * sleep (so the model traps waiting for it), an echo and a calculator call
 * that depends on the echo.
 */
export function sessionRequest(pool: { namespace: string; name: string }): CreateSessionRequest {
  return {
    prompt: "Plan a trip: weather and a sum.",
    tools: builtinToolSpecs()
      .filter((s) => s.name !== "replay")
      .map((s) => ({ ...s, pool })),
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
