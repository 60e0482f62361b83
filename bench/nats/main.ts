/**
 * @module `npm run bench -- nats [--json FILE] [--sessions 200] [--calls 5]
 * [--tool-ms 5] [--runners 2] [--concurrency 128]`: routing overhead of tool
 * calls over NATS on loopback. Starts a real nats-server, tool runner
 * processes (the ToolPool entrypoint) and one NATS executor in this process;
 * drives `sessions` concurrent sessions of `calls` sequential calls each to
 * the builtin `sleep` tool; reports routing overhead p50/p99 (executor
 * publish → result queued, minus the tool's own run time) and completions
 * lost and duplicated (both must be 0).
 *
 * `--tls` runs the same load twice, side by side: on an open server and on a
 * secured one (JWT credentials with the chart's permissions for the executor
 * and the runners, TLS on every connection, per-call tokens checked), so the
 * table shows what authentication and TLS cost. The analytic bound of the
 * overhead is unchanged (two JetStream publishes and acks plus the effect-log
 * writes per call); TLS adds encryption per message, not round trips.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { createLogger } from "../../common/src/index.js";
import { BenchFlags } from "../lib/flags.js";
import { quantile, r3 } from "../lib/stats.js";
import { NatsExecutor } from "../../engine-pod/src/executor/nats-executor.js";
import { natsClientSecurity } from "../../hack/nats.js";
import { sampleToolPool, startToolStack } from "../../hack/stack.js";
import { runLoad } from "./load.js";

interface Args {
  json?: string;
  sessions: number;
  calls: number;
  toolMs: number;
  runners: number;
  concurrency: number;
  tls: boolean;
}

const USAGE = ["--json FILE", "--tls", "--sessions N", "--calls N", "--tool-ms N", "--runners N", "--concurrency N"];

function parseArgs(argv: string[]): Args {
  const f = new BenchFlags(argv, USAGE);
  const count = (name: string, fallback: number): number => f.num(name, fallback, { integer: true, min: 0 });
  return {
    ...(f.str("json") !== undefined ? { json: f.str("json")! } : {}),
    sessions: count("sessions", 200),
    calls: count("calls", 5),
    toolMs: count("tool-ms", 5),
    runners: count("runners", 2),
    concurrency: count("concurrency", 128),
    tls: f.has("tls"),
  };
}

/** Entry point called by bench/main.ts. */
export async function run(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const say = (msg: string): void => console.error(`[nats-bench] ${msg}`);
  const modes = args.tls ? (["plain", "auth+tls"] as const) : (["plain"] as const);
  const results: Record<string, Record<string, unknown>> = {};
  for (const mode of modes) results[mode] = await measure(args, mode === "auth+tls", say);
  const keys = ["routing_overhead_ms_p50", "routing_overhead_ms_p99", "completions_lost", "completions_duplicated", "calls", "call_latency_ms_p50", "call_latency_ms_p99", "throughput_calls_per_s", "wall_ms"];
  console.log(`| metric | ${modes.join(" | ")} |\n| --- |${modes.map(() => " --- |").join("")}`);
  for (const key of keys) console.log(`| ${key} | ${modes.map((m) => String(results[m]![key])).join(" | ")} |`);
  if (args.json) {
    await writeFile(args.json, `${JSON.stringify(args.tls ? results : results["plain"], null, 2)}\n`);
    say(`wrote ${args.json}`);
  }
  if (Object.values(results).some((r) => (r["completions_lost"] as number) > 0 || (r["completions_duplicated"] as number) > 0)) process.exitCode = 1;
}

async function measure(args: Args, secure: boolean, say: (msg: string) => void): Promise<Record<string, unknown>> {
  const log = createLogger("nats-bench", process.env["LOG_LEVEL"] ?? "warn");
  const stack = await startToolStack({ runners: args.runners, pool: sampleToolPool({ concurrency: args.concurrency, pool: "bench" }), secure });
  say(`${secure ? "auth+tls" : "plain"}: nats-server ${stack.natsUrl}, ${args.runners} runner processes × concurrency ${args.concurrency}`);
  let executor: NatsExecutor | undefined;
  try {
    const security = secure ? await natsClientSecurity(stack.security, { kind: "engine", namespace: stack.pool.namespace, pod: "bench-engine" }) : undefined;
    executor = await NatsExecutor.connect({ servers: stack.natsUrl, namespace: stack.pool.namespace, enginePod: "bench-engine", log, ...(security !== undefined ? { security } : {}) });
    // Warm-up: connections, consumers, JIT.
    await runLoad(executor, { sessions: 20, callsPerSession: 2, toolMs: args.toolMs, pool: stack.pool, tag: "warmup" });
    say(`load: ${args.sessions} sessions × ${args.calls} calls, tool ${args.toolMs} ms`);
    const r = await runLoad(executor, { sessions: args.sessions, callsPerSession: args.calls, toolMs: args.toolMs, pool: stack.pool, tag: "bench" });
    return {
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
      config: { sessions: args.sessions, calls_per_session: args.calls, tool_ms: args.toolMs, runners: args.runners, runner_concurrency: args.concurrency, transport: "loopback", secure, cpus: os.cpus().length, node: process.version },
    };
  } finally {
    await executor?.close();
    await stack.stop();
  }
}
