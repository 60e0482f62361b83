/**
 * @module The in-process executor: runs builtin tools inside the engine pod
 * (tests, the local demo, single-process deployments). Each call runs under
 * its deadline; every outcome — output, failure, timeout, cancellation — is
 * a resolved {@link ToolResult}, never a rejection.
 */
import { ErrorCode, runUnderDeadline, type Logger, type StopReason } from "../../../common/src/index.js";
import { createBuiltinTools, type BuiltinToolSet } from "../../../common/src/builtin-tools/index.js";
import { errorOutcome } from "../../../common/src/wire/index.js";
import type { Executor, ToolCall, ToolResult } from "./executor.js";

export interface InProcessExecutorOptions {
  /** Tools by name; default: the builtin set. */
  tools?: BuiltinToolSet;
  log?: Logger;
}

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

  async execute(call: ToolCall, signal?: AbortSignal): Promise<ToolResult> {
    const started = performance.now();
    const fail = (code: string, message: string): ToolResult => ({ callId: call.id, ...errorOutcome(code, message), runMs: performance.now() - started });
    if (this.closed) return fail(ErrorCode.Cancelled, "the executor is closed");
    if (signal?.aborted) return fail(ErrorCode.Cancelled, "the call was cancelled before it started");
    const tool = this.tools.get(call.tool);
    if (tool === undefined) return fail(ErrorCode.UnknownTool, `no builtin tool named "${call.tool}"`);

    const budgetMs = call.deadline - Date.now();
    if (budgetMs <= 0) return fail(ErrorCode.ToolTimeout, `tool "${call.tool}" was past its deadline before it started`);

    const controller = new AbortController();
    this.running.add(controller);
    const outcome = await runUnderDeadline((s) => tool.run(call.arguments, s), { budgetMs, controller, ...(signal !== undefined ? { signal } : {}) });
    this.running.delete(controller);
    const result: ToolResult = outcome.ok
      ? { callId: call.id, ok: true, output: outcome.value, runMs: performance.now() - started }
      : "stopped" in outcome
        ? outcome.stopped.kind === "timeout"
          ? fail(ErrorCode.ToolTimeout, `tool "${call.tool}" did not finish within ${Math.round(outcome.stopped.ms)} ms`)
          : fail(ErrorCode.Cancelled, outcome.stopped.why)
        : fail(ErrorCode.ToolFailed, outcome.error instanceof Error ? outcome.error.message : String(outcome.error));
    this.log?.debug({ callId: call.id, tool: call.tool, ok: result.ok, code: result.error?.code, runMs: result.runMs }, "tool call finished");
    return result;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const controller of [...this.running]) {
      controller.abort({ kind: "cancelled", why: "the executor is closing" } satisfies StopReason);
    }
  }
}
