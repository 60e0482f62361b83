/**
 * @module The executor the engine sees when speculation is on: a session's
 * real call asks that session's speculator first; a hit hands back the
 * cached future (the tool is not run again: in async mode the result is
 * injected as soon as it is ready, in sync modes the re-entry starts the
 * moment it is), a miss runs the call on the real executor.
 */
import type { Executor, ToolCall, ToolResult } from "../executor/executor.js";
import type { SessionSpeculator } from "./session-speculator.js";

export class SpeculativeExecutor implements Executor {
  private readonly speculators = new Map<string, SessionSpeculator>();

  constructor(readonly inner: Executor) {}

  attach(sessionId: string, speculator: SessionSpeculator): void {
    this.speculators.set(sessionId, speculator);
  }

  detach(sessionId: string): void {
    this.speculators.delete(sessionId);
  }

  speculator(sessionId: string): SessionSpeculator | undefined {
    return this.speculators.get(sessionId);
  }

  execute(call: ToolCall, signal?: AbortSignal): Promise<ToolResult> {
    const hit = this.speculators.get(call.sessionId)?.resolve(call);
    return hit ?? this.inner.execute(call, signal);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
