/**
 * @module The serving layer's speculation: an {@link Engine} decorator that
 * gives every session a {@link SessionSpeculator} fed by the session's own
 * events, registers it with the {@link SpeculativeExecutor} the engine runs
 * calls through, and adds what speculation did to the session's `done` event.
 * Every session gets one, so outputs posted to `cache-tool-output` serve its
 * calls; only sessions with `speculation.enabled` draft and start tools early.
 */
import { ErrorCode, InterlaceError, type ChatMessage, type CreateSessionRequest, type Logger, type SessionEvent, type SpeculationUsage } from "../../../common/src/index.js";
import type { Engine, EngineSession, SessionPlacement } from "../engine/index.js";
import type { DraftModel, DraftPrompt } from "./draft-model.js";
import { SessionSpeculator } from "./session-speculator.js";
import type { SpeculationStats } from "./speculation-stats.js";
import type { SpeculativeExecutor } from "./speculative-executor.js";
import type { ToolCache } from "./tool-cache.js";

type Done = Extract<SessionEvent, { type: "done" }>;

export interface SpeculationDeps {
  executor: SpeculativeExecutor;
  cache: ToolCache;
  stats: SpeculationStats;
  /** Set once the draft model is loaded (sessions opened before run without drafting). */
  draft: () => DraftModel | undefined;
  log: Logger;
}

/** The session's opening context as the draft reads it: the app's system text and the client's messages, with the session's tools. */
function draftPrompt(request: CreateSessionRequest): DraftPrompt {
  const callStyle = request.policy?.type === "lpt-dag" ? (request.policy.callStyle ?? "json") : "json";
  const messages: ChatMessage[] = typeof request.prompt === "string" ? [{ role: "user", content: request.prompt }] : [...request.prompt];
  return { messages: request.system !== undefined ? [{ role: "system", content: request.system }, ...messages] : messages, tools: request.tools ?? [], callStyle };
}

/** Wraps `engine` so its sessions speculate (see the module comment). */
export function withSpeculation(engine: Engine, deps: SpeculationDeps): Engine & { speculator(sessionId: string): SessionSpeculator | undefined } {
  const wrapped = new Map<string, EngineSession>();
  const createSession = (request: CreateSessionRequest, placement?: SessionPlacement): EngineSession => {
    const settings = request.speculation ?? { enabled: false };
    const draft = deps.draft();
    if (settings.enabled && settings.draft !== undefined && draft === undefined) {
      throw new InterlaceError(ErrorCode.BadRequest, "speculation.draft needs a draft model: start the engine with --draft-model PATH");
    }
    const session = engine.createSession(request, placement);
    const speculator = new SessionSpeculator({
      sessionId: session.id,
      settings: settings.enabled ? settings : { ...settings, lambda: 0 },
      tools: request.tools ?? [],
      prompt: draftPrompt(request),
      ...(request.policy?.type === "lpt-dag" ? { policy: request.policy } : {}),
      executor: deps.executor.inner,
      cache: deps.cache,
      ...(draft !== undefined ? { draft } : {}),
      stats: deps.stats,
      log: deps.log,
    });
    deps.executor.attach(session.id, speculator);
    const out = wrapSession(session, settings.enabled, speculator, () => {
      deps.executor.detach(session.id);
      wrapped.delete(session.id);
    });
    wrapped.set(session.id, out);
    return out;
  };
  return {
    createSession,
    getSession: (id) => wrapped.get(id) ?? engine.getSession(id),
    interrupt: (id, input) => engine.interrupt(id, input),
    cancel: (id, reason) => engine.cancel(id, reason),
    cancelAll: (reason) => engine.cancelAll(reason),
    complete: (request) => engine.complete(request),
    stats: () => engine.stats(),
    advertisedPrefixes: () => engine.advertisedPrefixes(),
    ...(engine.warmPrefix !== undefined ? { warmPrefix: (request: CreateSessionRequest) => engine.warmPrefix!(request) } : {}),
    queuedInterrupts: (id) => engine.queuedInterrupts(id),
    countTokens: (text) => engine.countTokens(text),
    get contextSize() {
      return engine.contextSize;
    },
    get ready() {
      return engine.ready;
    },
    close: () => engine.close(),
    speculator: (id) => deps.executor.speculator(id),
  };
}

/** The session seen through speculation: the same events, `done` carrying the speculation usage when it was on. */
function wrapSession(inner: EngineSession, report: boolean, speculator: SessionSpeculator, release: () => void): EngineSession {
  let done: Done | undefined;
  const finish = (event: Done): Done => {
    if (done !== undefined) return done;
    const usage: SpeculationUsage = speculator.close();
    done = report ? { ...event, speculation: { ...usage } } : event;
    release();
    return done;
  };
  const map = (event: SessionEvent): SessionEvent => (event.type === "done" ? finish(event) : event);
  const feed = (event: SessionEvent): void => {
    if (event.type !== "done") speculator.onEvent(event);
    else finish(event);
  };
  for (const event of inner.events) feed(event);
  const unsubscribe = inner.subscribe(feed);
  const finished = inner.finished.then((event) => {
    unsubscribe();
    return finish(event);
  });
  return {
    id: inner.id,
    get events() {
      return inner.events.map(map);
    },
    subscribe: (listener) => inner.subscribe((event) => listener(map(event))),
    finished,
    inspect: () => inner.inspect(),
  };
}
