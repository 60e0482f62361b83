/**
 * @module The local stack serving the sample AgentApp, as a cluster would run
 * it but as local processes: a nats-server, the tool runners of
 * `samples/toolpool.yaml`, an engine process for `samples/enginepool.yaml`
 * (on an embedded default model: the sample names a model that cannot be
 * downloaded here), and a router. `samples/agentapp.yaml` is rendered by the
 * operator's own `resolveAppConfig` and published where the operator
 * publishes it (the `interlace-apps` KV bucket), so the router serves the app
 * at `/v1/apps/<namespace>/<name>` exactly as in a cluster.
 *
 * The sample's HTTP tool points at a cluster-internal service; locally it is
 * pointed at a small stand-in service this module starts (and says so).
 *
 * With `cml`, the model that decides its own calls comes up beside it the
 * same way: `samples/enginepool-cml.yaml` (a real model and its CML LoRA
 * adapter, from this machine's files instead of the sample's node paths) in
 * a second engine process, and `samples/agentapp-cml.yaml` published for the
 * router, its tools run by the same tool runners over NATS.
 */
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { parseAllDocuments } from "yaml";
import { createLogger, type Logger } from "../common/src/index.js";
import { appKey, openAppsBucket, type AppConfig, type ToolRunnerConfig } from "../common/src/protocol/index.js";
import type { AgentApp, EnginePool, ToolPool } from "../operator/src/api/index.js";
import { renderRunnerConfig, resolveAppConfig } from "../operator/src/resources/index.js";
import { routerOptions } from "../router/src/config.js";
import { startRouter, type Router } from "../router/src/index.js";
import { spawnEngine, type EngineProcess } from "./engine-process.js";
import { NatsServer } from "./nats.js";
import { spawnToolRunner, type ToolRunnerProcess } from "./stack.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const NAMESPACE = "default";

export interface AppStackOptions {
  /** Generated model preset the engine runs (`bench`, or `test` for speed). */
  preset: "test" | "bench";
  /** Sample files (default: the repository's `samples/`). */
  samplesDir?: string;
  /** Also serve the fine-tuned model's sample app: the model file and its adapter (absent: the base model alone). */
  cml?: { model: string; adapter?: string };
  log?: Logger;
}

export interface AppStack {
  /** The router's address. */
  routerUrl: string;
  app: AppConfig;
  /** The same app with `callingMode: sync`, published beside it as `<name>-sync` (for comparisons). */
  syncApp: AppConfig;
  /** With `cml`: the app whose model decides its own calls. */
  cmlApp?: AppConfig;
  engine: EngineProcess;
  runners: ToolRunnerProcess[];
  router: Router;
  /** What the local stack changed from the samples, for the user to read. */
  notes: string[];
  stop(): Promise<void>;
}

interface Samples {
  app: AgentApp;
  enginePool: EnginePool;
  toolPools: Map<string, ToolPool>;
}

/** Reads every object of the sample files, namespaced as `kubectl apply` into `default` would. */
export function readSamples(dir = join(ROOT, "samples")): Samples {
  const objects = ["agentapp.yaml", "enginepool.yaml", "toolpool.yaml"].flatMap((f) =>
    parseAllDocuments(readFileSync(join(dir, f), "utf8")).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string } }),
  );
  for (const o of objects) o.metadata.namespace ??= NAMESPACE;
  const app = objects.find((o) => o.kind === "AgentApp") as AgentApp | undefined;
  if (app === undefined) throw new Error(`no AgentApp in ${dir}/agentapp.yaml`);
  const enginePool = objects.find((o) => o.kind === "EnginePool" && o.metadata.name === app.spec.enginePool.name) as EnginePool | undefined;
  if (enginePool === undefined) throw new Error(`the sample AgentApp names EnginePool ${app.spec.enginePool.name}, which ${dir}/enginepool.yaml does not define`);
  const toolPools = new Map(objects.filter((o) => o.kind === "ToolPool").map((o) => [o.metadata.name, o as ToolPool]));
  return { app, enginePool, toolPools };
}

/** The fine-tuned model's sample EnginePool and AgentApp. */
export function readCmlSamples(dir = join(ROOT, "samples")): { app: AgentApp; enginePool: EnginePool } {
  const read = <T>(f: string): T => {
    const o = parseAllDocuments(readFileSync(join(dir, f), "utf8"))[0]!.toJS() as T & { metadata: { namespace?: string } };
    o.metadata.namespace ??= NAMESPACE;
    return o;
  };
  return { app: read<AgentApp>("agentapp-cml.yaml"), enginePool: read<EnginePool>("enginepool-cml.yaml") };
}

/** A stand-in for the sample's weather service: a fixed forecast per city, as JSON. */
async function startWeatherService(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      let city = "somewhere";
      try {
        city = String((JSON.parse(body) as { city?: unknown }).city ?? city);
      } catch {
        // a body that is not JSON still gets a forecast
      }
      const forecasts = ["sunny, 24C", "cloudy, 17C", "light rain, 12C", "windy, 15C"];
      const forecast = forecasts[[...city].reduce((n, ch) => n + ch.charCodeAt(0), 0) % forecasts.length]!;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ city, forecast }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("weather service has no port");
  return { url: `http://127.0.0.1:${address.port}/weather`, server };
}

/** The runner configs of the app's ToolPools, with cluster-internal HTTP tools pointed at `localHttp`. */
function runnerConfigs(samples: Samples, localHttp: string, notes: string[]): ToolRunnerConfig[] {
  return (samples.app.spec.toolPools ?? []).map((ref) => {
    const pool = samples.toolPools.get(ref.name);
    if (pool === undefined) throw new Error(`the sample AgentApp names ToolPool ${ref.name}, which the samples do not define`);
    const rendered = renderRunnerConfig(pool);
    if (!rendered.ok) throw new Error(`ToolPool ${ref.name}: ${rendered.message}`);
    const tools = rendered.config.tools.map((t) => {
      if (t.implementation.type !== "http" || !/\.svc(\.cluster\.local)?[:/]/.test(t.implementation.url)) return t;
      notes.push(`tool ${t.name}: ${t.implementation.url} is cluster-internal; the local stack serves it from a stand-in at ${localHttp}`);
      return { ...t, implementation: { ...t.implementation, url: localHttp } };
    });
    return { ...rendered.config, tools };
  });
}

/** Brings the stack up; on failure stops what it started. */
export async function startAppStack(options: AppStackOptions): Promise<AppStack> {
  const log = options.log ?? createLogger("app-stack", process.env["LOG_LEVEL"] ?? "warn");
  const samples = readSamples(options.samplesDir);
  const notes: string[] = [];
  const stops: (() => Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.reverse()) await s().catch((err: unknown) => log.warn({ err }, "stop failed"));
  };
  try {
    const nats = await NatsServer.start();
    stops.push(() => nats.stop());
    const weather = await startWeatherService();
    stops.push(() => new Promise<void>((r) => weather.server.close(() => r())));

    const runners: ToolRunnerProcess[] = [];
    for (const config of runnerConfigs(samples, weather.url, notes)) {
      const runner = await spawnToolRunner(nats.url, config, `${config.pool}-runner-0`);
      runners.push(runner);
      stops.push(() => runner.stop());
    }

    const pool = samples.enginePool;
    const model = pool.spec.model;
    const named = model?.url ?? model?.path ?? (model?.pvc !== undefined ? `pvc ${model.pvc.claimName}:${model.pvc.path}` : "none");
    notes.push(`EnginePool ${pool.metadata.name}: its model (${named}) is replaced by the generated \`${options.preset}\` model, in one engine process`);
    const engine = await spawnEngine(
      [
        ...["--model-preset", options.preset, "--sequences", "2", "--context-size", "4096", "--threads", "1"],
        ...["--executor", "nats", "--nats-url", nats.url, "--pool", `${NAMESPACE}/${pool.metadata.name}`, "--pod-name", `${pool.metadata.name}-0`, "--heartbeat-ms", "500"],
      ],
      { env: { LOG_LEVEL: "info" } },
    );
    stops.push(() => engine.stop());

    let cml: { app: AgentApp; enginePool: EnginePool } | undefined;
    if (options.cml !== undefined) {
      cml = readCmlSamples(options.samplesDir);
      const name = cml.enginePool.metadata.name ?? "";
      notes.push(`EnginePool ${name}: the model and adapter on the sample's node paths are this machine's ${options.cml.model}${options.cml.adapter !== undefined ? ` and ${options.cml.adapter}` : " (no adapter found: the base model alone)"}, in a second engine process`);
      const cmlEngine = await spawnEngine(
        [
          ...["--model", options.cml.model, ...(options.cml.adapter !== undefined ? ["--adapters", options.cml.adapter] : [])],
          ...["--sequences", "2", "--context-size", "4096", "--threads", String(cml.enginePool.spec.runtime.threads ?? 2)],
          ...["--executor", "nats", "--nats-url", nats.url, "--pool", `${NAMESPACE}/${name}`, "--pod-name", `${name}-0`, "--heartbeat-ms", "500"],
        ],
        { env: { LOG_LEVEL: "info" } },
      );
      stops.push(() => cmlEngine.stop());
    }

    const router = await startRouter(
      routerOptions({ natsUrl: nats.url, upstreamTimeoutMs: 30_000, presenceMs: 1000, logLevel: "warn" }),
      log.child({ component: "router" }),
    );
    stops.push(() => router.close());

    // What the operator does for an AgentApp: render it against its pools and publish it.
    const resolved = resolveAppConfig(samples.app, pool, samples.toolPools);
    if (!resolved.ok) throw new Error(`AgentApp ${samples.app.metadata.name}: ${resolved.reason}: ${resolved.message}`);
    const app = resolved.config;
    const syncApp: AppConfig = { ...app, name: `${app.name}-sync`, callingMode: "sync", interrupts: { ...app.interrupts, userInterrupts: false } };
    notes.push(`AgentApp ${app.name}-sync: a copy of ${app.name} with callingMode sync, for comparison`);
    let cmlApp: AppConfig | undefined;
    if (cml !== undefined) {
      const rendered = resolveAppConfig(cml.app, cml.enginePool, samples.toolPools);
      if (!rendered.ok) throw new Error(`AgentApp ${cml.app.metadata.name}: ${rendered.reason}: ${rendered.message}`);
      cmlApp = rendered.config;
    }
    const published = [app, syncApp, ...(cmlApp !== undefined ? [cmlApp] : [])];
    const nc = await connect({ servers: nats.url });
    try {
      const bucket = await openAppsBucket(nc);
      for (const c of published) await bucket.put(appKey(c.namespace, c.name), JSON.stringify(c));
    } finally {
      await nc.close();
    }
    await waitUntil(
      () =>
        published.every((c) => router.apps.get(c.namespace, c.name) !== undefined) &&
        router.engines.loads(app.namespace, pool.metadata.name ?? "").length > 0 &&
        (cml === undefined || router.engines.loads(app.namespace, cml.enginePool.metadata.name ?? "").length > 0),
      // A real model loads in seconds, more on a busy CPU.
      cml === undefined ? 30_000 : 180_000,
      `the router did not see AgentApp ${app.namespace}/${app.name} and a ready engine of its pool`,
    );
    return { routerUrl: `http://127.0.0.1:${router.port}`, app, syncApp, ...(cmlApp !== undefined ? { cmlApp } : {}), engine, runners, router, notes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function waitUntil(check: () => boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`${what} within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
