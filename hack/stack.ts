/**
 * @module The NATS half of the local stack: a nats-server (JetStream,
 * loopback) plus tool runner processes serving a ToolPool spec — the same
 * entrypoint (`toolrunner/src/main.ts`) a ToolPool pod runs. The
 * engine side connects with `NatsExecutor.connect({ servers: stack.natsUrl,
 * enginePod, defaultPool: stack.pool })`. Used by `hack/demo.ts` and the
 * NATS benchmark.
 *
 *     const stack = await startToolStack({ runners: 1 });
 *     ... NatsExecutor.connect({ servers: stack.natsUrl, enginePod: "demo", defaultPool: stack.pool, log }) ...
 *     await stack.stop();
 */
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { builtinToolSpecs } from "../common/src/builtin-tools/index.js";
import type { ToolSpec } from "../common/src/index.js";
import type { ToolRunnerConfig } from "../common/src/protocol/index.js";
import { createNatsSecurity, natsClientSecurity, NatsServer, removeNatsSecurity, type NatsSecurityFixture } from "./nats.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The sample pool: every builtin tool (echo, sleep, calculator, replay) in `default/tools`. */
export function sampleToolPool(overrides: Partial<ToolRunnerConfig> = {}): ToolRunnerConfig {
  return {
    namespace: "default",
    pool: "tools",
    tools: builtinToolSpecs().map((spec) => ({ ...spec, implementation: { type: "builtin" as const } })),
    ...overrides,
  };
}

/** A tool runner child process. */
export interface ToolRunnerProcess {
  id: string;
  /** Its /healthz /readyz /metrics port. */
  port: number;
  child: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Spawns `tsx toolrunner/src/main.ts` with a spec file; resolves once it
 * prints its ready line. Its log lines (warn and up unless LOG_LEVEL says
 * otherwise) are appended to `logFile` when given, else dropped: a bench
 * passes one so a runner that drops calls is visible (`summarizeRunnerLog`).
 */
export async function spawnToolRunner(natsUrl: string, config: ToolRunnerConfig, id: string, env: NodeJS.ProcessEnv = {}, logFile?: string): Promise<ToolRunnerProcess> {
  const dir = mkdtempSync(join(tmpdir(), "interlace-runner-"));
  const specFile = join(dir, "tools.json");
  writeFileSync(specFile, JSON.stringify(config));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(ROOT, "toolrunner/src/main.ts"), "--spec-file", specFile, "--nats-url", natsUrl, "--port", "0", "--host", "127.0.0.1", "--runner-id", id],
    { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, LOG_LEVEL: process.env["LOG_LEVEL"] ?? "warn", ...env } },
  );
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  void exited.then(() => rmSync(dir, { recursive: true, force: true }));
  if (logFile !== undefined) child.stdout!.on("data", (chunk: Buffer) => appendFileSync(logFile, chunk));
  const port = await new Promise<number>((resolvePort, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`tool runner ${id} not ready within 60 s: ${out}`)), 60_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      out = (out + chunk.toString()).slice(-8000);
      const m = /toolrunner ready port=(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePort(Number(m[1]));
      }
    });
    void exited.then(() => reject(new Error(`tool runner ${id} exited before it was ready: ${out}`)));
  });
  child.stdout!.resume();
  return {
    id,
    port,
    child,
    async stop(signal = "SIGTERM") {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface ToolStackOptions {
  /** Tool runner processes (default 1). */
  runners?: number;
  /** The pool they serve (default {@link sampleToolPool}). */
  pool?: ToolRunnerConfig;
  /** Use an already running NATS server instead of starting one. */
  natsUrl?: string;
  /** Start the server with JWT authentication and TLS (as the chart does); runners get their own credentials. */
  secure?: boolean;
}

export interface ToolStack {
  natsUrl: string;
  /** The trust root and CA of a secure stack (mint an engine's credentials with `natsClientSecurity`). */
  security?: NatsSecurityFixture;
  /** The pool to pass as the executor's `defaultPool` (and in ToolSpec.pool). */
  pool: { namespace: string; name: string };
  config: ToolRunnerConfig;
  runners: ToolRunnerProcess[];
  /** Stops the runners (gracefully), then the nats-server if this stack started it. */
  stop(): Promise<void>;
}

/** Brings up nats-server and the tool runners. */
export async function startToolStack(options: ToolStackOptions = {}): Promise<ToolStack> {
  const security = options.secure === true ? await createNatsSecurity() : undefined;
  const server = options.natsUrl === undefined ? await NatsServer.start(security !== undefined ? { security } : {}) : null;
  const natsUrl = options.natsUrl ?? server!.url;
  const config = options.pool ?? sampleToolPool();
  const runners: ToolRunnerProcess[] = [];
  const env: NodeJS.ProcessEnv = {};
  if (security !== undefined) {
    const creds = await natsClientSecurity(security, { kind: "runner", namespace: config.namespace, pool: config.pool });
    const credsFile = join(security.dir, "runner.creds");
    writeFileSync(credsFile, creds.creds!, { mode: 0o600 });
    env["INTERLACE_NATS_CREDS"] = credsFile;
    env["INTERLACE_NATS_CA"] = creds.caFile;
  }
  try {
    for (let i = 0; i < (options.runners ?? 1); i++) runners.push(await spawnToolRunner(natsUrl, config, `${config.pool}-runner-${i}`, env));
  } catch (err) {
    await Promise.all(runners.map((r) => r.stop("SIGKILL")));
    await server?.stop();
    if (security !== undefined) removeNatsSecurity(security);
    throw err;
  }
  return {
    natsUrl,
    ...(security !== undefined ? { security } : {}),
    pool: { namespace: config.namespace, name: config.pool },
    config,
    runners,
    async stop() {
      await Promise.all(runners.map((r) => r.stop()));
      await server?.stop();
      if (security !== undefined) removeNatsSecurity(security);
    },
  };
}

/** Engine pod flags that send its tool calls to this stack's NATS (`--executor nats`). */
export function engineNatsFlags(stack: Pick<ToolStack, "natsUrl">, podName = "demo-engine"): string[] {
  return ["--executor", "nats", "--nats-url", stack.natsUrl, "--pod-name", podName];
}

/** The same tool specs, assigned to `pool`: an engine with the NATS executor routes them there. */
export function inPool(specs: readonly ToolSpec[], pool: { namespace: string; name: string }): ToolSpec[] {
  return specs.map((spec) => ({ ...spec, pool }));
}
