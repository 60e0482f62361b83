/**
 * @module Async-Naive (AsyncLM §6): asynchronous function calling over a
 * stateless OpenAI-compatible endpoint — the engine's own
 * `/v1/chat/completions` with raw CML. The client streams the model's text,
 * dispatches each call block the moment its `[END]` arrives, and whenever a
 * result (or a user interrupt) arrives it stops the request and starts a new
 * one with the history plus `[INTR] id [HEAD] value [END]` appended: every
 * interrupt costs a request restart (the engine's prefix cache saves most of
 * the re-prefill). A call block still streaming is a client-side critical
 * section: the restart waits for its `[END]`.
 */
import { formatErrorLine } from "../../common/src/wire/index.js";
import { CML, ErrorCode, formatInterruptBlock, readEventStream, type ScriptedPolicySpec, type ToolSpec } from "../../common/src/index.js";
import type { Executor, ToolCall } from "../../engine-pod/src/executor/executor.js";
import type { BenchTask } from "./workloads.js";
import type { RunContext, TaskRun } from "./session-modes.js";
import { benchTools, sessionRequest, userInterruptId } from "./session-modes.js";

interface ChatChunk {
  choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[];
  interlace?: { finish_reason?: string; prefilled_tokens?: number };
  usage?: { completion_tokens?: number };
  error?: { message?: string };
}

const CALL_BLOCK = new RegExp(
  `${escape(CML.CALL)}\\s*([A-Za-z_][A-Za-z0-9_]*)\\s*${escape(CML.HEAD)}([\\s\\S]*?)${escape(CML.END)}`,
  "g",
);

function escape(marker: string): string {
  return marker.replace(/[[\]]/g, "\\$&");
}

function openCallBlock(text: string): boolean {
  return text.lastIndexOf(CML.CALL) > text.lastIndexOf(CML.END);
}

export interface AsyncNaiveContext extends RunContext {
  /** Runs the tools: the same NATS tool pools the engine uses. */
  executor: Executor;
}

/** Runs the task client-side; when `signal` fires the current request is aborted and the run fails. */
export async function runAsyncNaive(task: BenchTask, ctx: AsyncNaiveContext, signal?: AbortSignal): Promise<TaskRun> {
  const tools: ToolSpec[] = benchTools(task, ctx.pool);
  const policy = sessionRequest(task, "async", ctx).policy as ScriptedPolicySpec;
  const byName = new Map(tools.map((t) => [t.name, t]));
  const arrived: { id: string; value: string }[] = [];
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
  };
  let pendingCalls = 0;
  let transcript = "";
  const dispatched = new Set<string>();
  let requests = 0;
  let tokensGenerated = 0;
  let tokensPrefilled = 0;
  let interrupts = 0;
  let firstTokenAt: number | undefined;
  let lastTokenAt = 0;

  const dispatchNewCalls = (): void => {
    for (const m of transcript.matchAll(CALL_BLOCK)) {
      const id = m[1]!;
      if (dispatched.has(id)) continue;
      dispatched.add(id);
      const planned = task.calls.find((c) => c.id === id);
      if (planned === undefined) throw new Error(`${task.id}/asyncNaive: the model called unknown id ${id}`);
      const call: ToolCall = {
        id,
        sessionId: `naive-${task.id}`,
        tool: planned.tool,
        arguments: planned.arguments,
        spec: byName.get(planned.tool)!,
        deadline: Date.now() + 60_000,
      };
      pendingCalls++;
      void ctx.executor.execute(call).then(
        (result) => {
          pendingCalls--;
          arrived.push({ id, value: result.output });
          notify();
        },
        (err: unknown) => {
          // The model reads a failed call as an error result, as in the engine's modes.
          pendingCalls--;
          arrived.push({ id, value: formatErrorLine(ErrorCode.ToolFailed, err instanceof Error ? err.message : String(err)) });
          notify();
        },
      );
    }
  };

  const timers = task.userInterrupts.map((u, i) =>
    setTimeout(() => {
      arrived.push({ id: userInterruptId(i), value: u.text });
      notify();
    }, u.atMs),
  );
  let userLeft = task.userInterrupts.length;
  // A time limit stops the request in flight and any wait for an arrival.
  const onLimit = (): void => notify();
  signal?.addEventListener("abort", onLimit, { once: true });
  try {
    for (;;) {
      signal?.throwIfAborted();
      const abort = new AbortController();
      // An arrival while streaming stops the request, outside a call block.
      wake = () => {
        if (!openCallBlock(transcript) || signal?.aborted === true) abort.abort();
      };
      if (arrived.length > 0) wake();
      const messages = [{ role: "user", content: task.prompt }, ...(transcript === "" ? [] : [{ role: "assistant", content: transcript }])];
      let finish: string | undefined;
      requests++;
      try {
        const res = await fetch(`${ctx.engineUrl}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          signal: abort.signal,
          body: JSON.stringify({
            model: "interlace",
            messages,
            tools: tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters, interlace_estimated_latency_ms: t.estimatedLatencyMs } })),
            stream: true,
            stream_options: { include_usage: true },
            temperature: 0,
            interlace_raw_cml: true,
            interlace_continue: transcript !== "",
            interlace_policy: policy,
          }),
        });
        if (!res.ok || res.body === null) throw new Error(`${task.id}/asyncNaive: HTTP ${res.status}: ${await res.text()}`);
        for await (const chunk of readEventStream<ChatChunk>(res.body)) {
          if (chunk.error !== undefined) throw new Error(`${task.id}/asyncNaive: ${chunk.error.message ?? "stream error"}`);
          const text = chunk.choices?.[0]?.delta?.content;
          if (typeof text === "string" && text !== "") {
            const now = performance.now();
            firstTokenAt ??= now;
            lastTokenAt = now;
            transcript += text;
            dispatchNewCalls();
            // A restart deferred by a call block happens once the block closes.
            if (arrived.length > 0 && !openCallBlock(transcript)) abort.abort();
          }
          if (chunk.interlace?.finish_reason !== undefined) finish = chunk.interlace.finish_reason;
          if (chunk.interlace?.prefilled_tokens !== undefined) tokensPrefilled += chunk.interlace.prefilled_tokens;
          if (chunk.usage?.completion_tokens !== undefined) tokensGenerated += chunk.usage.completion_tokens;
        }
      } catch (err) {
        if (!abort.signal.aborted) throw err;
      }
      wake = undefined;
      if (finish === "length") throw new Error(`${task.id}/asyncNaive: the request hit its token limit`);
      if (finish === "stop" && pendingCalls === 0 && arrived.length === 0 && userLeft === 0 && dispatched.size === task.calls.length) break;
      // Trap, or stopped for an arrival: wait for at least one, then restart with all that arrived.
      while (arrived.length === 0) {
        signal?.throwIfAborted();
        await new Promise<void>((resolve) => (wake = resolve));
      }
      wake = undefined;
      for (const a of arrived.splice(0)) {
        if (a.id.startsWith("user")) userLeft--;
        transcript += formatInterruptBlock(a.id, a.value);
        interrupts++;
      }
    }
  } finally {
    signal?.removeEventListener("abort", onLimit);
    for (const timer of timers) clearTimeout(timer);
  }
  return {
    taskId: task.id,
    mode: "asyncNaive",
    e2eMs: firstTokenAt === undefined ? 0 : lastTokenAt - firstTokenAt,
    tokensGenerated,
    tokensPrefilled,
    interrupts,
    traps: 0,
    requests,
    trapDecisions: { keep: 0, swap: 0, recompute: 0 },
    tpotMs: NaN,
    calls: dispatched.size,
    scripted: true,
  };
}
