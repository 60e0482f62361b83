/**
 * @module Runs one benchmark task in a server-side calling mode (`async`,
 * `sync` with and without prefix reuse, `syncParallel`) through the engine's
 * session API: the same scripted LPT policy over the task's ground-truth DAG
 * (or, with the model deciding, no policy at all), the same tools (replayed
 * by real tool runners over NATS), the same seeds.
 * User-triggered interrupts are posted at their scheduled times.
 */
import type { CallingMode, CreateSessionRequest, SessionEvent, ToolSpec, TrapDecision } from "../../common/src/index.js";
import { SessionClient } from "../../common/src/index.js";
import { taskBreakdown, type TaskBreakdown } from "./breakdown.js";
import type { BenchTask } from "./workloads.js";

export type ModeName = "sync" | "syncNoReuse" | "syncParallel" | "asyncNaive" | "async" | UpstreamModeName;

/** The same modes on an engine pod with `--backend openai` in front of a third-party server. */
export type UpstreamModeName = "upstreamSync" | "upstreamSyncParallel" | "upstreamAsyncNaive";
const UPSTREAM_ENGINE_MODE: Record<UpstreamModeName, CallingMode> = { upstreamSync: "sync", upstreamSyncParallel: "syncParallel", upstreamAsyncNaive: "asyncNaive" };

export interface TaskRun {
  taskId: string;
  mode: ModeName;
  /** First generated token → last token, ms. */
  e2eMs: number;
  tokensGenerated: number;
  tokensPrefilled: number;
  interrupts: number;
  traps: number;
  trapDecisions: Record<TrapDecision, number>;
  /** Median time per decode step the engine measured for this task. */
  tpotMs: number;
  calls: number;
  /** Requests the client made (async-naive restarts once per interrupt). */
  requests?: number;
  scripted: boolean;
  /** Where the time went (server-side modes). */
  breakdown?: TaskBreakdown;
  /** With the model deciding: the calls it dispatched, and the text it wrote outside blocks. */
  modelCalls?: { id: string; tool: string; arguments: Record<string, unknown> }[];
  modelText?: string;
}

export interface RunContext {
  engineUrl: string;
  /** Which pool runs the benchmark's tools (the replay tool runners). */
  pool: { namespace: string; name: string };
  callStyle: "json" | "python";
  finalText: string;
  /** `script` (default): the LPT oracle over the ground-truth DAG writes the calls; `model`: the model decides every call. */
  policy?: "script" | "model";
  /** Generated-token limit of an unscripted session. */
  maxTokens?: number;
}

/** The task's tools, each with the mean duration of its calls as the LPT hint. */
export function benchTools(task: BenchTask, pool: RunContext["pool"]): ToolSpec[] {
  return task.tools.map((tool) => {
    const durations = task.calls.filter((c) => c.tool === tool.name).map((c) => c.latencyMs);
    const estimate = durations.length === 0 ? 100 : Math.round(durations.reduce((s, d) => s + d, 0) / durations.length);
    return { ...tool, estimatedLatencyMs: estimate, pool };
  });
}

/** The id the benchmark posts the task's i-th user message under. */
export function userInterruptId(i: number): string {
  return `user${i + 1}`;
}

export function sessionRequest(task: BenchTask, mode: Exclude<ModeName, "asyncNaive" | UpstreamModeName>, ctx: RunContext): CreateSessionRequest {
  const engineMode: CallingMode = mode === "syncNoReuse" ? "sync" : mode;
  return {
    prompt: task.prompt,
    tools: benchTools(task, ctx.pool),
    mode: engineMode,
    ...(engineMode === "sync" ? { prefixReuse: mode !== "syncNoReuse" } : {}),
    temperature: 0,
    ...(ctx.policy === "model" ? { seed: 1, ...(ctx.maxTokens !== undefined ? { maxTokens: ctx.maxTokens } : {}) } : { policy: scriptedPolicy(task, ctx) }),
  };
}

/** The LPT oracle over the task's ground-truth DAG (the paper's cheat sheet). */
function scriptedPolicy(task: BenchTask, ctx: RunContext): NonNullable<CreateSessionRequest["policy"]> {
  const afterInterrupt = new Map(task.userInterrupts.flatMap((u, i) => u.callIds.map((id) => [id, userInterruptId(i)] as const)));
  return {
      type: "lpt-dag",
      callStyle: ctx.callStyle,
      finalText: ctx.finalText,
      calls: task.calls.map((c) => {
        const gate = afterInterrupt.get(c.id);
        return {
          id: c.id,
          tool: c.tool,
          arguments: c.arguments,
          dependsOn: c.dependsOn,
          estimatedLatencyMs: c.latencyMs,
          ...(gate !== undefined ? { afterInterrupt: gate } : {}),
        };
      }),
  };
}

/** Summarises a finished session's events; a scripted session must dispatch exactly the task's calls. */
export function summarize(task: BenchTask, mode: ModeName, events: readonly SessionEvent[], byModel = false): TaskRun {
  const done = events.find((e): e is Extract<SessionEvent, { type: "done" }> => e.type === "done");
  if (done === undefined) throw new Error(`${task.id}/${mode}: the session ended without a done event`);
  if (done.reason === "error" || done.reason === "cancelled") {
    const error = events.find((e) => e.type === "error");
    throw new Error(`${task.id}/${mode}: session ended with ${done.reason}${error && "message" in error ? `: ${error.message}` : ""}`);
  }
  const trapDecisions: Record<TrapDecision, number> = { keep: 0, swap: 0, recompute: 0 };
  for (const e of events) if (e.type === "trap") trapDecisions[e.decision]++;
  const callEvents = events.filter((e): e is Extract<SessionEvent, { type: "call" }> => e.type === "call");
  const calls = callEvents.length;
  if (!byModel && calls !== task.calls.length) throw new Error(`${task.id}/${mode}: ${calls} calls dispatched, task has ${task.calls.length}${refusals(events)}`);
  return {
    taskId: task.id,
    mode,
    e2eMs: done.timings.e2eMs,
    tokensGenerated: done.usage.decodedTokens,
    tokensPrefilled: done.usage.prefilledTokens,
    interrupts: done.usage.interrupts,
    traps: done.usage.traps,
    trapDecisions,
    tpotMs: done.timings.tpotMs,
    calls,
    scripted: done.scripted,
    breakdown: taskBreakdown(events, new Map(task.calls.map((c) => [c.id, c.latencyMs]))),
    ...(byModel
      ? {
          modelCalls: callEvents.map((e) => ({ id: e.callId, tool: e.tool, arguments: e.arguments })),
          modelText: events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join(""),
        }
      : {}),
  };
}

/** The calls the engine refused, with its reasons (what the model read instead of a result). */
export function refusals(events: readonly SessionEvent[]): string {
  const refused = events.flatMap((e) => (e.type === "call_error" ? [`${e.callId}: ${e.message}`] : []));
  return refused.length === 0 ? "" : `; refused by the engine: ${refused.join("; ")}`;
}

/**
 * Runs the task in a server-side mode. When `signal` fires (the benchmark's
 * time limit), the session is cancelled and the run fails with the signal's reason.
 */
export async function runSessionMode(task: BenchTask, mode: Exclude<ModeName, "asyncNaive">, ctx: RunContext, signal?: AbortSignal): Promise<TaskRun> {
  signal?.throwIfAborted();
  const client = new SessionClient(ctx.engineUrl);
  // Upstream rows: the same scripted request, in the mode the openai backend serves (asyncNaive server-side).
  const request =
    mode in UPSTREAM_ENGINE_MODE
      ? { ...sessionRequest(task, "async", ctx), mode: UPSTREAM_ENGINE_MODE[mode as UpstreamModeName] }
      : sessionRequest(task, mode as Exclude<ModeName, "asyncNaive" | UpstreamModeName>, ctx);
  const { id } = await client.create(request);
  const onAbort = (): void => void client.cancel(id).catch(() => undefined);
  signal?.addEventListener("abort", onAbort, { once: true });
  const timers: NodeJS.Timeout[] = [];
  const posted = task.userInterrupts.map(
    (u, i) =>
      new Promise<void>((resolve, reject) => {
        timers.push(
          setTimeout(() => {
            client.interrupt(id, { id: userInterruptId(i), kind: "user", value: u.text }).then(resolve, reject);
          }, u.atMs),
        );
      }),
  );
  // Read once the session is over; a post that failed after an earlier failure must not go unhandled.
  const postedAll = Promise.all(posted);
  void postedAll.catch(() => undefined);
  const events: SessionEvent[] = [];
  try {
    for await (const event of client.events(id, signal)) events.push(event);
    signal?.throwIfAborted();
    // The session's own failure is the reason to record, not a user interrupt it never read.
    const run = summarize(task, mode, events, ctx.policy === "model");
    await postedAll;
    return run;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    for (const timer of timers) clearTimeout(timer);
  }
}
