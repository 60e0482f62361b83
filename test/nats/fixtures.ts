/**
 * @module Shared fixtures of the NATS tests: a pool spec with the builtin
 * tools, a call builder, and in-process executor/runner start-up with
 * teardown.
 */
import { createLogger } from "../../common/src/index.js";
import type { RunnerToolSpec, ToolRunnerConfig } from "../../common/src/protocol/index.js";
import type { ToolCall } from "../../engine-pod/src/executor/executor.js";
import { NatsExecutor, type NatsExecutorOptions } from "../../engine-pod/src/executor/nats-executor.js";
import { ToolRunner, type ToolRunnerOptions } from "../../toolrunner/src/runner.js";

export const log = createLogger("test", process.env["LOG_LEVEL"] ?? "silent");
export const POOL = { namespace: "default", name: "tools" } as const;

interface Teardownable {
  teardown(fn: () => unknown): void;
}

export const BUILTIN_TOOLS: RunnerToolSpec[] = [
  {
    name: "echo",
    description: "echo",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false },
    implementation: { type: "builtin" },
  },
  {
    name: "sleep",
    description: "sleep",
    parameters: { type: "object", properties: { ms: { type: "integer", minimum: 0 }, result: { type: "string" } }, required: ["ms"] },
    implementation: { type: "builtin" },
  },
  {
    name: "calculator",
    description: "calculator",
    parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
    implementation: { type: "builtin" },
  },
];

export function poolConfig(extra: Partial<ToolRunnerConfig> = {}): ToolRunnerConfig {
  return { namespace: POOL.namespace, pool: POOL.name, tools: BUILTIN_TOOLS, concurrency: 8, ...extra };
}

let seq = 0;
/** A call of `tool` in `sessionId` (ids unique per process). */
export function makeCall(sessionId: string, tool: string, args: Record<string, unknown>, timeoutMs = 10_000, pool: { namespace: string; name: string } = POOL): ToolCall {
  return {
    id: `c${++seq}`,
    sessionId,
    tool,
    arguments: args,
    spec: { name: tool, description: tool, parameters: { type: "object" }, pool },
    deadline: Date.now() + timeoutMs,
  };
}

export async function startExecutor(t: Teardownable, url: string | string[], extra: Partial<NatsExecutorOptions> = {}): Promise<NatsExecutor> {
  const executor = await NatsExecutor.connect({ servers: url, namespace: POOL.namespace, enginePod: extra.enginePod ?? "engine-0", log, ...extra });
  t.teardown(() => executor.close());
  return executor;
}

export async function startRunner(t: Teardownable, url: string | string[], config: ToolRunnerConfig = poolConfig(), extra: Partial<ToolRunnerOptions> = {}): Promise<ToolRunner> {
  const runner = await ToolRunner.start({ servers: url, config, log, heartbeatMs: 500, pullExpiresMs: 1_000, drainTimeoutMs: 500, ...extra });
  t.teardown(() => runner.stop());
  return runner;
}

/** Sums a prom-client counter's values whose labels include `labels`. */
export async function counterValue(metric: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> }, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

/** A tool runner child process (`tsx toolrunner/src/main.ts`), as a ToolPool pod runs it. */
export interface RunnerProcess {
  pid: number;
  port: number;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** A metric's value from the runner's /metrics (sum over matching label sets). */
  metric(name: string): Promise<number>;
}

export async function spawnRunner(t: Teardownable, url: string | string[], config: ToolRunnerConfig, runnerId: string, env: Record<string, string> = {}): Promise<RunnerProcess> {
  const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { spawn } = await import("node:child_process");
  const dir = mkdtempSync(join(tmpdir(), "interlace-runner-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const specFile = join(dir, "tools.json");
  writeFileSync(specFile, JSON.stringify(config));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "toolrunner/src/main.ts", "--spec-file", specFile, "--nats-url", Array.isArray(url) ? url.join(",") : url, "--port", "0", "--host", "127.0.0.1", "--runner-id", runnerId, "--heartbeat-ms", "500"],
    { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, LOG_LEVEL: process.env["LOG_LEVEL"] ?? "warn", ...env } },
  );
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`runner ${runnerId} not ready in 60s: ${out}`)), 60_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /toolrunner ready port=(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    void exited.then((code) => reject(new Error(`runner ${runnerId} exited with ${code}: ${out}`)));
  });
  return {
    pid: child.pid!,
    port,
    exited,
    async kill(signal = "SIGKILL") {
      child.kill(signal);
      await exited;
    },
    async metric(name) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      let sum = 0;
      for (const line of text.split("\n")) if (line.startsWith(name) && /^[^ {]+(\{[^}]*\})? /.test(line) && line.split(/[ {]/)[0] === name) sum += Number(line.split(" ").pop());
      return sum;
    },
  };
}

