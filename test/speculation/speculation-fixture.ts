/**
 * @module The stack the speculation tests run on: a real engine on the
 * generated `test` model with a second generated model as its draft, a real
 * nats-server and a tool runner, the speculation layer wired as the engine
 * pod wires it, and an executor wrapper that sees (and timestamps) every call
 * reaching the tools.
 */
import type { Test } from "tap";
import { createLogger, type CreateSessionRequest, type SessionEvent, type ToolSpec } from "../../common/src/index.js";
import { createEngine, loadRuntime, type Engine, type EngineOptions } from "../../engine-pod/src/engine/index.js";
import type { Executor, ToolCall, ToolResult } from "../../engine-pod/src/executor/executor.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { createSpeculationHook, DraftModel, SpeculationStats, SpeculativeExecutor, ToolCache, withSpeculation } from "../../engine-pod/src/speculation/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { POOL, startExecutor, startRunner } from "../nats/fixtures.js";

export const sleepSpec = (speculative: boolean): ToolSpec => ({
  name: "sleep",
  description: "waits ms, then answers result",
  parameters: { type: "object", properties: { ms: { type: "integer" }, result: { type: "string" } }, required: ["ms"] },
  speculative,
  pool: POOL,
});
export const echoSpec: ToolSpec = { name: "echo", description: "echoes", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }, pool: POOL };

/** Sees every call that reaches the real executor (the NATS executor), by id, in one ordered log with the sessions' own events. */
export class Observed implements Executor {
  readonly runs: ToolCall[] = [];
  /** `run:<id>` when a call reaches the tools, `settled:<id>` when its result is back (and whatever a test adds). */
  readonly log: string[] = [];
  constructor(private readonly inner: Executor) {}
  execute(call: ToolCall, signal?: AbortSignal): Promise<ToolResult> {
    this.runs.push(call);
    this.log.push(`run:${call.id}`);
    return this.inner.execute(call, signal).finally(() => this.log.push(`settled:${call.id}`));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export interface SpeculationStack {
  engine: Engine;
  observed: Observed;
  cache: ToolCache;
  draft: DraftModel;
}

/** `draftPath`: another GGUF as the draft (default: the generated `test` model, seed 2). */
export async function speculationStack(t: Test, opts: { cacheTtlMs?: number; draftPath?: string } = {}): Promise<SpeculationStack> {
  const nats = await startNatsServer(t);
  await startRunner(t, nats.url);
  const observed = new Observed(await startExecutor(t, nats.url, { enginePod: "engine-spec" }));
  const [modelPath, draftPath] = await Promise.all([ensureModel({ preset: "test" }), opts.draftPath ?? ensureModel({ preset: "test", seed: 2 })]);
  const speculative = new SpeculativeExecutor(observed);
  const log = createLogger("engine-test", "warn");
  const options: EngineOptions = { modelPath, gpu: false, sequences: 2, contextSize: 2048, threads: 1, kvPolicy: "keep", maxTokens: 400, prefixCache: true };
  const runtime = await loadRuntime(options, log);
  const core = await createEngine(options, speculative, log, { calibrate: false, runtime, speculation: createSpeculationHook(speculative, 8) });
  t.teardown(() => core.close());
  const draft = await DraftModel.load(runtime.llama, { modelPath: draftPath, sequences: 2, contextSize: 1024, threads: 1 }, log);
  t.teardown(() => draft.close());
  const cache = new ToolCache({ ttlMs: opts.cacheTtlMs ?? 60_000 });
  const engine = withSpeculation(core, { executor: speculative, cache, stats: new SpeculationStats(), draft: () => draft, log });
  return { engine, observed, cache, draft };
}

/** Runs a session to its end; its call events also go into `log` (as `call:<id>`), in order with the tool runs. */
export async function finish(
  engine: Engine,
  request: CreateSessionRequest,
  log?: string[],
): Promise<{ events: readonly SessionEvent[]; done: Extract<SessionEvent, { type: "done" }> }> {
  const s = engine.createSession(request);
  if (log !== undefined) {
    for (const e of s.events) if (e.type === "call") log.push(`call:${e.callId}`);
    s.subscribe((e) => {
      if (e.type === "call") log.push(`call:${e.callId}`);
    });
  }
  const done = await s.finished;
  return { events: s.events, done };
}

/** `id=value` of every interrupt the session read, in order. */
export const results = (events: readonly SessionEvent[]): string[] =>
  events.filter((e): e is Extract<SessionEvent, { type: "interrupt" }> => e.type === "interrupt").map((e) => `${e.id}=${e.value}`);
