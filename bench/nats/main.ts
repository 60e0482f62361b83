/**
 * @module `npm run bench -- nats [--json FILE] [--sessions 200] [--calls 5]
 * [--tool-ms 5] [--runners 2] [--concurrency 128]`: routing overhead of tool
 * calls over NATS on loopback. Starts a real nats-server, tool runner
 * processes (the ToolPool entrypoint) and one NATS executor in this process;
 * drives `sessions` concurrent sessions of `calls` sequential calls each to
 * the builtin `sleep` tool; reports routing overhead p50/p99 (executor
 * publish → result queued, minus the tool's own run time) and completions
 * lost and duplicated (both must be 0).
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { createLogger } from "../../common/src/index.js";
import { NatsExecutor } from "../../engine-pod/src/executor/nats-executor.js";
import { sampleToolPool, startToolStack } from "../../hack/stack.js";
import { runLoad } from "./load.js";

interface Args {
  json?: string;
  sessions: number;
  calls: number;
  toolMs: number;
  runners: number;
  concurrency: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { sessions: 200, calls: 5, toolMs: 5, runners: 2, concurrency: 128 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0) throw new Error(`${a} needs a non-negative integer`);
      return v;
    };
    if (a === "--json") {
      const v = argv[++i];
      if (v === undefined) throw new Error("--json needs a file");
      args.json = v;
    } else if (a === "--sessions") args.sessions = num();
    else if (a === "--calls") args.calls = num();
    else if (a === "--tool-ms") args.toolMs = num();
    else if (a === "--runners") args.runners = num();
    else if (a === "--concurrency") args.concurrency = num();
    else throw new Error(`unknown flag ${a} (flags: --json FILE, --sessions N, --calls N, --tool-ms N, --runners N, --concurrency N)`);
  }
  return args;
}

function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** Entry point called by bench/main.ts. */
export async function run(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const say = (msg: string): void => console.error(`[nats-bench] ${msg}`);
  const log = createLogger("nats-bench", process.env["LOG_LEVEL"] ?? "warn");
  const stack = await startToolStack({ runners: args.runners, pool: sampleToolPool({ concurrency: args.concurrency, pool: "bench" }) });
  say(`nats-server ${stack.natsUrl}, ${args.runners} runner processes × concurrency ${args.concurrency}`);
  let executor: NatsExecutor | undefined;
  try {
    executor = await NatsExecutor.connect({ servers: stack.natsUrl, enginePod: "bench-engine", log });
    // Warm-up: connections, consumers, JIT.
    await runLoad(executor, { sessions: 20, callsPerSession: 2, toolMs: args.toolMs, pool: stack.pool, tag: "warmup" });
    say(`load: ${args.sessions} sessions × ${args.calls} calls, tool ${args.toolMs} ms`);
    const r = await runLoad(executor, { sessions: args.sessions, callsPerSession: args.calls, toolMs: args.toolMs, pool: stack.pool, tag: "bench" });
    const result = {
      routing_overhead_ms_p50: r3(quantile(r.overheadMs, 0.5)),
      routing_overhead_ms_p99: r3(quantile(r.overheadMs, 0.99)),
      completions_lost: r.lost,
      completions_duplicated: r.duplicated,
      calls: r.calls,
      completed: r.completed,
      errors: r.errors,
      call_latency_ms_p50: r3(quantile(r.latencyMs, 0.5)),
      call_latency_ms_p99: r3(quantile(r.latencyMs, 0.99)),
      throughput_calls_per_s: r3((r.completed / r.wallMs) * 1000),
      wall_ms: r3(r.wallMs),
      config: { sessions: args.sessions, calls_per_session: args.calls, tool_ms: args.toolMs, runners: args.runners, runner_concurrency: args.concurrency, transport: "loopback", cpus: os.cpus().length, node: process.version },
    };
    console.log("| metric | value |\n| --- | --- |");
    for (const key of ["routing_overhead_ms_p50", "routing_overhead_ms_p99", "completions_lost", "completions_duplicated", "calls", "call_latency_ms_p50", "call_latency_ms_p99", "throughput_calls_per_s", "wall_ms"] as const) {
      console.log(`| ${key} | ${result[key]} |`);
    }
    if (args.json) {
      await writeFile(args.json, `${JSON.stringify(result, null, 2)}\n`);
      say(`wrote ${args.json}`);
    }
    if (r.lost > 0 || r.duplicated > 0) process.exitCode = 1;
  } finally {
    await executor?.close();
    await stack.stop();
  }
}
