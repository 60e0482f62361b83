/**
 * @module Shared fixtures of the NATS tests: a pool spec with the builtin
 * tools, a call builder, and in-process executor/runner start-up with
 * teardown.
 */
import { createLogger } from "../../common/src/index.js";
import type { RunnerToolSpec, ToolRunnerConfig } from "../../common/src/protocol/index.js";
import type { ToolCall } from "../../engine-pod/src/executor/executor.js";
import { NatsExecutor, type NatsExecutorOptions } from "../../engine-pod/src/executor/nats-executor.js";
import { ToolRunner, type ToolRunnerOptions } from "../../operator/src/toolrunner/runner.js";

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

export async function startExecutor(t: Teardownable, url: string, extra: Partial<NatsExecutorOptions> = {}): Promise<NatsExecutor> {
  const executor = await NatsExecutor.connect({ servers: url, enginePod: extra.enginePod ?? "engine-0", log, ...extra });
  t.teardown(() => executor.close());
  return executor;
}

export async function startRunner(t: Teardownable, url: string, config: ToolRunnerConfig = poolConfig(), extra: Partial<ToolRunnerOptions> = {}): Promise<ToolRunner> {
  const runner = await ToolRunner.start({ servers: url, config, log, heartbeatMs: 500, pullExpiresMs: 1_000, ...extra });
  t.teardown(() => runner.stop());
  return runner;
}

/** Sums a prom-client counter's values whose labels include `labels`. */
export async function counterValue(metric: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> }, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}
