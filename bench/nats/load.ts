/**
 * @module The NATS load driver shared by the benchmark and the load test:
 * `sessions` concurrent sessions, each making `callsPerSession` calls one
 * after another (a call is made when the previous result is in), through one
 * NATS executor. Every call's output is unique and checked, so a lost,
 * misrouted or duplicated completion is counted, not assumed away.
 *
 * Routing overhead of a call = (execute → result resolved) − the tool's own
 * run time as the runner measured it: publish, JetStream storage, pull,
 * validation, result publish and correlation.
 */
import type { ToolCall, ToolResult } from "../../engine-pod/src/executor/executor.js";
import type { NatsExecutor } from "../../engine-pod/src/executor/nats-executor.js";

export interface LoadOptions {
  sessions: number;
  callsPerSession: number;
  /** How long the tool (builtin `sleep`) runs per call, ms. */
  toolMs: number;
  pool: { namespace: string; name: string };
  /** Per-call deadline, ms (default 60000). */
  deadlineMs?: number;
  /** Prefix of session ids (distinct per run). */
  tag?: string;
}

export interface LoadReport {
  calls: number;
  completed: number;
  /** Calls that did not come back with their own output (error, timeout, wrong output). */
  lost: number;
  /** Second completions of a call seen by the executor (never delivered twice, but counted). */
  duplicated: number;
  errors: Record<string, number>;
  /** Per completed call, ms. */
  overheadMs: number[];
  latencyMs: number[];
  wallMs: number;
}

async function counter(metric: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> {
  return (await metric.get()).values.reduce((a, v) => a + v.value, 0);
}

export async function runLoad(executor: NatsExecutor, options: LoadOptions): Promise<LoadReport> {
  const tag = options.tag ?? `load-${Date.now().toString(36)}`;
  const dupBefore = await counter(executor.metrics.duplicateCompletions);
  const report: LoadReport = { calls: 0, completed: 0, lost: 0, duplicated: 0, errors: {}, overheadMs: [], latencyMs: [], wallMs: 0 };
  const started = performance.now();
  const session = async (s: number): Promise<void> => {
    const sessionId = `${tag}-s${s}`;
    for (let i = 0; i < options.callsPerSession; i++) {
      const expected = `${sessionId}/${i}`;
      const call: ToolCall = {
        id: `call-${i}`,
        sessionId,
        tool: "sleep",
        arguments: { ms: options.toolMs, result: expected },
        spec: { name: "sleep", description: "sleep", parameters: { type: "object" }, pool: options.pool },
        deadline: Date.now() + (options.deadlineMs ?? 60_000),
      };
      report.calls++;
      const t0 = performance.now();
      const r: ToolResult = await executor.execute(call);
      const latency = performance.now() - t0;
      if (r.ok && r.output === expected && r.callId === call.id) {
        report.completed++;
        report.latencyMs.push(latency);
        report.overheadMs.push(Math.max(0, latency - (r.runMs ?? 0)));
      } else {
        report.lost++;
        const code = r.error?.code ?? "wrong_output";
        report.errors[code] = (report.errors[code] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: options.sessions }, (_, s) => session(s)));
  report.wallMs = performance.now() - started;
  // A duplicate would arrive after its first completion; let stragglers land before counting.
  await new Promise((r) => setTimeout(r, 200));
  report.duplicated = (await counter(executor.metrics.duplicateCompletions)) - dupBefore;
  return report;
}
