/**
 * @module Shared fixture of the engine tests: a real engine on the generated
 * `test` model (real llama.cpp), and a tiny recording executor whose tools
 * sleep for a given time and answer deterministically, stamping when each
 * call started and ended. (The builtin in-process executor has its own tests;
 * this one exists to observe timing from inside the test.)
 */
import type { Test } from "tap";
import type { LlamaContextSequence } from "node-llama-cpp";
import { createLogger, type SessionEvent, type ToolSpec } from "../../common/src/index.js";
import {
  createEngine,
  loadRuntime,
  type Engine,
  type EngineExtras,
  type EngineOptions,
  type EngineSession,
  type Executor,
  type Runtime,
  type ToolCall,
  type ToolResult,
} from "../../engine-pod/src/engine/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";

export interface CallRecord {
  id: string;
  tool: string;
  arguments: Record<string, unknown>;
  startedAt: number;
  endedAt?: number;
  /** Engine tokens decoded (all sessions) when the call started. */
  decodedAtStart: number;
}

/** Tools of the tests: `wait` sleeps `ms`, `echo` answers at once. */
export const TOOLS: ToolSpec[] = [
  {
    name: "wait",
    description: "sleeps for ms milliseconds",
    parameters: { type: "object", properties: { ms: { type: "integer" }, tag: { type: "string" } }, required: ["ms"] },
    estimatedLatencyMs: 100,
  },
  {
    name: "echo",
    description: "returns its text",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    estimatedLatencyMs: 1,
  },
];

export class RecordingExecutor implements Executor {
  readonly calls: CallRecord[] = [];
  engine: Engine | undefined;

  execute(call: ToolCall, signal?: AbortSignal): Promise<ToolResult> {
    const rec: CallRecord = {
      id: call.id,
      tool: call.tool,
      arguments: call.arguments,
      startedAt: performance.now(),
      decodedAtStart: this.engine?.stats().tokensDecoded ?? -1,
    };
    this.calls.push(rec);
    const output =
      call.tool === "echo" ? `echo ${String(call.arguments["text"])}` : `waited ${String(call.arguments["ms"])} ${String(call.arguments["tag"] ?? "")}`.trim();
    const ms = call.tool === "wait" ? Number(call.arguments["ms"]) : 0;
    return new Promise((resolve) => {
      const done = (): void => {
        rec.endedAt = performance.now();
        resolve({ callId: call.id, ok: true, output });
      };
      if (ms <= 0) queueMicrotask(done);
      else {
        const timer = setTimeout(done, ms);
        signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          rec.endedAt = performance.now();
          resolve({ callId: call.id, ok: false, output: "error: cancelled" });
        });
      }
    });
  }

  async close(): Promise<void> {}
}

/**
 * A real engine on the `test` model, closed at teardown. The test loads the
 * runtime itself and hands it to the engine (a public option), so it can look
 * at the sequences a session's `inspect()` names.
 */
export async function startEngine(
  t: Test,
  options: Partial<EngineOptions> = {},
  extras: EngineExtras = {},
): Promise<{ engine: Engine; executor: RecordingExecutor; runtime: Runtime }> {
  const modelPath = await ensureModel({ preset: "test" });
  const executor = new RecordingExecutor();
  const log = createLogger("engine-test", "warn");
  const opts: EngineOptions = {
    modelPath,
    gpu: false,
    sequences: 4,
    contextSize: 2048,
    threads: 1,
    kvPolicy: "auto",
    maxTokens: 256,
    prefixCache: true,
    ...options,
  };
  const runtime = await loadRuntime(opts, log);
  const engine = await createEngine(opts, executor, log, { calibrate: false, runtime, ...extras });
  executor.engine = engine;
  t.teardown(() => engine.close());
  return { engine, executor, runtime };
}

/** The sequence a session holds now (undefined while a paused session has lent it out). */
export function sequenceOf(runtime: Runtime, s: EngineSession): LlamaContextSequence | undefined {
  const id = s.inspect().sequence;
  return id === null ? undefined : runtime.sequences[id];
}

/** Events of one type. */
export function eventsOf<T extends SessionEvent["type"]>(events: readonly SessionEvent[], type: T): Extract<SessionEvent, { type: T }>[] {
  return events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
}
