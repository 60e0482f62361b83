/**
 * @module The in-process executor: runs builtin tools inside the engine pod
 * (tests, the local demo, single-process deployments). Each call runs under
 * its deadline; every outcome — output, failure, timeout, cancellation — is
 * a resolved {@link ToolResult}, never a rejection.
 */
import { ErrorCode, type Logger } from "../../../common/src/index.js";
import { createBuiltinTools, type BuiltinToolSet } from "../../../common/src/builtin-tools/index.js";
import type { Executor, ToolCall, ToolResult } from "./executor.js";

export interface InProcessExecutorOptions {
  /** Tools by name; default: the builtin set. */
  tools?: BuiltinToolSet;
  log?: Logger;
}

/** Why a running call was stopped (the abort reason of its controller). */
type StopReason = { kind: "timeout"; ms: number } | { kind: "cancelled"; why: string };

export class InProcessExecutor implements Executor {
  readonly tools: BuiltinToolSet;
  private readonly log: Logger | undefined;
  private readonly running = new Set<AbortController>();
  private closed = false;

  constructor(options: InProcessExecutorOptions = {}) {
    this.tools = options.tools ?? createBuiltinTools();
    this.log = options.log;
  }

  /** Calls in flight. */
  get inFlight(): number {
    return this.running.size;
  }

  execute(call: ToolCall, signal?: AbortSignal): Promise<ToolResult> {
    const started = performance.now();
    const fail = (code: string, message: string): ToolResult => ({
      callId: call.id,
      ok: false,
      output: `error ${code}: ${message}`,
      error: { code, message },
      runMs: performance.now() - started,
    });
    if (this.closed) return Promise.resolve(fail(ErrorCode.Cancelled, "the executor is closed"));
    if (signal?.aborted) return Promise.resolve(fail(ErrorCode.Cancelled, "the call was cancelled before it started"));
    const tool = this.tools.get(call.tool);
    if (tool === undefined) return Promise.resolve(fail(ErrorCode.UnknownTool, `no builtin tool named "${call.tool}"`));

    const budgetMs = call.deadline - Date.now();
    if (budgetMs <= 0) return Promise.resolve(fail(ErrorCode.ToolTimeout, `tool "${call.tool}" was past its deadline before it started`));

    const controller = new AbortController();
    const stop = (reason: StopReason): void => controller.abort(reason);
    const timer = setTimeout(() => stop({ kind: "timeout", ms: budgetMs }), budgetMs);
    const onAbort = (): void => stop({ kind: "cancelled", why: "the call was cancelled" });
    signal?.addEventListener("abort", onAbort, { once: true });
    this.running.add(controller);

    // The stop promise settles the call the moment the controller aborts, even
    // when a tool ignores its signal; the tool's late outcome is dropped.
    const stopped = new Promise<StopReason>((resolve) =>
      controller.signal.addEventListener("abort", () => resolve(controller.signal.reason as StopReason), { once: true }),
    );
    const stopResult = (reason: StopReason): ToolResult =>
      reason.kind === "timeout"
        ? fail(ErrorCode.ToolTimeout, `tool "${call.tool}" did not finish within ${Math.round(reason.ms)} ms`)
        : fail(ErrorCode.Cancelled, reason.why);
    const ran = (async (): Promise<ToolResult> => {
      try {
        const output = await tool.run(call.arguments, controller.signal);
        return { callId: call.id, ok: true, output, runMs: performance.now() - started };
      } catch (err) {
        if (controller.signal.aborted) return stopResult(await stopped);
        const message = err instanceof Error ? err.message : String(err);
        return fail(ErrorCode.ToolFailed, message);
      }
    })();

    return Promise.race([ran, stopped.then(stopResult)]).then((result) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      this.running.delete(controller);
      if (!controller.signal.aborted) controller.abort({ kind: "cancelled", why: "finished" } satisfies StopReason);
      this.log?.debug({ callId: call.id, tool: call.tool, ok: result.ok, code: result.error?.code, runMs: result.runMs }, "tool call finished");
      return result;
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const controller of [...this.running]) {
      controller.abort({ kind: "cancelled", why: "the executor is closing" } satisfies StopReason);
    }
  }
}
