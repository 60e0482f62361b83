/**
 * @module One task of the autoscale bench, as a client runs it through the
 * router: open a session (honouring 429/503 with their Retry-After, as the
 * router answers while every engine is busy or none is ready yet), follow
 * its events to the end. The task's latency counts from its arrival, so
 * waiting for capacity is part of it, as its user would see.
 */
import { readEventStream, type SessionEvent } from "../../common/src/index.js";
import { sleepChain } from "../lib/sleep-chain.js";

export interface TaskOptions {
  /** Tool calls per task, one after the other. */
  calls: number;
  toolMs: number;
  /** Tokens the model generates before each call and the answer. */
  thinkTokens: number;
}

export interface TaskResult {
  /** Arrival, ms after the run's start. */
  atMs: number;
  ok: boolean;
  /** Arrival to the session's end, ms (ok tasks). */
  taskMs?: number;
  /** 429/503 answers retried before the session opened. */
  retries: number;
  /** Where an ok task's time went (absent for a failed one). */
  parts?: TaskParts;
  error?: string;
}

/**
 * An ok task's latency split by where it went, ms: the wait for the session
 * to open (the router's hold and the client's `Retry-After` waits), the
 * engine's time to the first token (queueing for a sequence and the prompt's
 * prefill), its one-token decode steps and multi-token steps (injected tool
 * results), and each call's round trip from the call to its result (the
 * runner's queue, JetStream, the tool's own time); `rest` is what none of
 * those covers (the scheduler's gaps between steps on a busy engine, the
 * stream's delivery), a few tens of ms below zero where the engine decodes
 * a call block's last tokens while the call already runs.
 */
export interface TaskParts {
  openMs: number;
  ttftMs: number;
  decodeMs: number;
  prefillMs: number;
  toolMs: number;
  restMs: number;
  decodedTokens: number;
}

/** The scripted task's body: `calls` sleeps in a chain, a little generation around each. */
export function taskBody(n: number, o: TaskOptions): Record<string, unknown> {
  const calls = sleepChain(o.calls, o.toolMs);
  return { prompt: `Task ${n}: look the item up and report.`, policy: { type: "lpt-dag", calls, thinkTokens: o.thinkTokens, finalText: "Done." } };
}

/** Runs one task; never throws (a failure is a result). */
export async function runTask(url: string, body: Record<string, unknown>, atMs: number, patienceMs: number): Promise<TaskResult> {
  const start = performance.now();
  const deadline = start + patienceMs;
  let retries = 0;
  try {
    let res: Response;
    for (;;) {
      res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      if ((res.status !== 429 && res.status !== 503) || performance.now() >= deadline) break;
      const wait = Math.max(100, Number(res.headers.get("retry-after") ?? "1") * 1000);
      await res.body?.cancel();
      retries++;
      await new Promise((r) => setTimeout(r, Math.min(wait, Math.max(0, deadline - performance.now()))));
    }
    if (res.status !== 201) return { atMs, ok: false, retries, error: `${res.status} ${(await res.text()).slice(0, 200)}` };
    const { id } = (await res.json()) as { id: string };
    const openMs = performance.now() - start;
    const events = await fetch(`${url}/${id}/events`);
    let done: Extract<SessionEvent, { type: "done" }> | undefined;
    let error: string | undefined;
    // Engine clock (ms since the session was accepted) of each call, to its result.
    const callAt = new Map<string, number>();
    let toolMs = 0;
    for await (const e of readEventStream<SessionEvent>(events.body!)) {
      if (e.type === "error" || e.type === "call_error") error = `${e.code}: ${e.message}`;
      if (e.type === "call") callAt.set(e.callId, e.t);
      if (e.type === "interrupt" && (e.kind === "tool_result" || e.kind === "tool_error")) {
        const at = callAt.get(e.id);
        if (at !== undefined) toolMs += e.t - at;
      }
      if (e.type === "done") done = e;
    }
    if (done === undefined || done.reason === "error") return { atMs, ok: false, retries, error: error ?? `stream ended with ${done?.reason ?? "no done event"}` };
    const taskMs = performance.now() - start;
    const { ttftMs, decodeMs, prefillMs } = done.timings;
    const parts = { openMs, ttftMs, decodeMs, prefillMs, toolMs, restMs: taskMs - openMs - ttftMs - decodeMs - prefillMs - toolMs, decodedTokens: done.usage.decodedTokens };
    return { atMs, ok: true, taskMs, retries, parts };
  } catch (err) {
    return { atMs, ok: false, retries, error: String(err).slice(0, 200) };
  }
}
