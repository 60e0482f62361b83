/**
 * @module Runs a program's ready calls on the engines (Parrot Algorithm 1 in
 * the router). Each output of a call is one engine session: the prompt is the
 * template rendered up to that output; the request carries the deduced
 * objective as the engine's admission priority, and its prefix-hash chain is
 * the app's own segments followed by the prompt cut at variable boundaries.
 * A `latency` request also carries a batch cap (`maxBatch`): the engine runs
 * the steps it is in with few sequences.
 *
 * Calls that become ready together are placed in units: the members of a
 * task group together (FindEngine(TaskGroup)), and otherwise calls sharing
 * their template's leading text. A unit's first request is placed as a
 * session is (longest known prefix, CHWBL bound, ring on a miss); the rest
 * prefer its engine and are sent once the first has filled its prompt (its
 * first event after `started`): each then forks the shared prefix from the
 * first's sequence at admission (the engine's prefix fork), so the prefix is
 * filled once. Filled program prefixes are remembered per engine
 * ({@link ProgramPrefixes}) for the placement of later requests.
 *
 * When every engine refuses (all sequences busy) a request waits and tries
 * again instead of failing, up to `queueTimeoutMs`. A cancelled program's
 * signal stops its waits and streams and ends its open engine sessions.
 */
import { readEventStream, type CreateSessionRequest, type Logger, type SessionEvent } from "../../../common/src/index.js";
import { extendPrefixChain, prefixHashChain } from "../../../common/src/prefix-hash.js";
import { functionTools, templateOutputs } from "../../../common/src/semantic-function.js";
import { HttpError } from "../errors.js";
import type { RouterMetrics } from "../metrics.js";
import { appMessages } from "../request-merge.js";
import { placeAndPost, type PlaceContext, type PlacedResponse } from "../upstream.js";
import { OBJECTIVE_PRIORITY } from "./dag.js";
import type { ProgramPrefixes } from "./program-prefixes.js";
import type { ProgramDispatcher, ProgramRun, ReadyCall } from "./program-run.js";
import { renderUntil } from "./render.js";

export interface ExecutorContext extends PlaceContext {
  metrics: RouterMetrics;
  log: Logger;
  prefixes: ProgramPrefixes;
  /** How long a request may keep being refused for capacity before its call fails. */
  queueTimeoutMs: number;
  /** Batch cap sent with a request deduced `latency` (Parrot's small batches on the critical path). */
  latencyBatch: number;
}

interface Prepared {
  ready: ReadyCall;
  output: string;
  body: CreateSessionRequest;
  chain: string[];
  affinityKey: string;
  /** Entries of `chain` that are the app's own (system, tools, few-shot). */
  appSegments: number;
}

interface Generated {
  value: string;
  pod: string;
  promptTokens: number;
  prefilledTokens: number;
}

class CallFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class ProgramExecutor implements ProgramDispatcher {
  constructor(private readonly ctx: ExecutorContext) {}

  dispatch(run: ProgramRun, calls: readonly ReadyCall[]): void {
    for (const c of calls) this.ctx.metrics.programRequests.inc({ objective: c.deduced.objective });
    const groups = new Set(calls.filter((c) => c.deduced.group !== undefined).map((c) => c.deduced.group!));
    for (const g of groups) this.ctx.metrics.taskGroupSize.observe(calls.filter((c) => c.deduced.group === g).length);
    const units = new Map<string, Prepared[]>();
    for (const c of calls) {
      // A call taken over from another replica resumes at its first output without a value.
      const first = this.prepare(run, c, run.pendingOutputs(c.call)[0] ?? templateOutputs(c.call.pieces)[0]!);
      // A task group is one unit; otherwise calls whose prompts share the template's leading text.
      const key = c.deduced.group !== undefined ? `group:${c.deduced.group}` : `prefix:${first.chain[first.appSegments] ?? ""}`;
      units.set(key, [...(units.get(key) ?? []), first]);
    }
    for (const unit of units.values()) void this.runUnit(run, unit);
  }

  private prepare(run: ProgramRun, ready: ReadyCall, output: string): Prepared {
    const app = run.config;
    const fn = ready.call.fn;
    const settings = fn.outputs.find((o) => o.name === output)!;
    const rendered = renderUntil(ready.call, output, (v) => run.value(v));
    const own = appMessages(app);
    const tools = functionTools(fn, app.tools);
    const base = prefixHashChain({ messages: own, tools });
    const chain = [...base, ...extendPrefixChain(base.at(-1) ?? `app:${app.namespace}/${app.name}`, rendered.segments.map((s) => `var\u0000${s}`))];
    const body: CreateSessionRequest = {
      prompt: [...own, { role: "user", content: rendered.text }],
      tools,
      mode: tools.length > 0 ? app.callingMode : "async",
      maxTokens: Math.min(settings.maxTokens, app.maxTokens),
      temperature: settings.temperature,
      priority: OBJECTIVE_PRIORITY[ready.deduced.objective],
      ...(ready.deduced.objective === "latency" ? { maxBatch: this.ctx.latencyBatch } : {}),
      ...(ready.call.policy !== undefined ? { policy: ready.call.policy } : {}),
    };
    return { ready, output, body, chain, affinityKey: base.at(-1) ?? `app:${app.namespace}/${app.name}`, appSegments: base.length };
  }

  /** Places a unit: its first request as a session, the rest on the same engine once the shared prefix is filled. */
  private async runUnit(run: ProgramRun, unit: Prepared[]): Promise<void> {
    const [leader, ...rest] = unit;
    if (leader === undefined) return;
    let filled!: (pod: string | undefined) => void;
    const leaderFilled = new Promise<string | undefined>((r) => (filled = r));
    const leaderDone = this.runCall(run, leader, undefined, (pod) => filled(pod)).finally(() => filled(undefined));
    if (rest.length === 0) return leaderDone;
    const pod = await leaderFilled;
    await Promise.all([leaderDone, ...rest.map((p) => this.runCall(run, p, pod, () => undefined))]);
  }

  /** Every output of one call, in template order; the first output's request is `first`. */
  private async runCall(run: ProgramRun, first: Prepared, prefer: string | undefined, onFilled: (pod: string) => void): Promise<void> {
    const call = first.ready.call;
    try {
      let next: Prepared | undefined = first;
      const outputs = templateOutputs(call.pieces);
      for (let i = outputs.indexOf(first.output); next !== undefined && !run.signal.aborted; i++) {
        const got = await this.generate(run, next, next === first ? prefer : run.placedOn.get(call.id), next === first ? onFilled : () => undefined);
        run.placedOn.set(call.id, got.pod);
        const u = run.usage.get(call.id) ?? { promptTokens: 0, prefilledTokens: 0 };
        run.usage.set(call.id, { promptTokens: u.promptTokens + got.promptTokens, prefilledTokens: u.prefilledTokens + got.prefilledTokens });
        run.produced(call, next.output, got.value);
        const following = outputs[i + 1];
        next = following !== undefined ? this.prepare(run, first.ready, following) : undefined;
      }
    } catch (err) {
      const e = err instanceof CallFailure ? err : err instanceof HttpError ? new CallFailure(err.code, err.message) : new CallFailure("internal", (err as Error).message);
      this.ctx.log.info({ program: run.id, call: call.id, code: e.code, reason: e.message }, "program call failed");
      run.failed(call, e.code, `call "${call.id}" (${call.fn.name}) failed: ${e.message}`);
    }
  }

  /** Places and opens the request; while every engine is full it waits and tries again, up to the queue timeout. */
  private async place(run: ProgramRun, p: Prepared, prefer: string | undefined): Promise<PlacedResponse> {
    const pool = { namespace: run.config.namespace, name: run.config.enginePool.name };
    const deadline = Date.now() + this.ctx.queueTimeoutMs;
    for (;;) {
      try {
        // A cancel during the POST ends the session once its id is known (generate), rather than orphaning it.
        return await placeAndPost(this.ctx, pool, p, "/v1/sessions", p.body, run.signal, {
          ...(prefer !== undefined ? { prefer } : {}),
          prefixes: (pod) => this.ctx.prefixes.known(pod),
          completePost: true,
        });
      } catch (err) {
        const retryable = err instanceof HttpError && (err.status === 429 || err.status === 503);
        if (!retryable || Date.now() > deadline || run.signal.aborted) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** One engine session: placed, its events read to the end. */
  private async generate(run: ProgramRun, p: Prepared, prefer: string | undefined, onFilled: (pod: string) => void): Promise<Generated> {
    const placed = await this.place(run, p, prefer);
    const pod = placed.engine.pod;
    if (!placed.response.ok) {
      const text = await placed.response.text();
      let code = "engine_error";
      let message = text;
      try {
        const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
        code = body.error?.code ?? code;
        message = body.error?.message ?? text;
      } catch {
        /* not JSON: the text is the message */
      }
      throw new CallFailure(code, `engine ${pod} refused the request (${placed.response.status}): ${message}`);
    }
    const { id } = (await placed.response.json()) as { id: string };
    const session = `${placed.engine.endpoint}/v1/sessions/${encodeURIComponent(id)}`;
    // Cancelled: end the engine session at once (dropping its stream would too, but only once the stream is open).
    const cancel = (): void => void fetch(session, { method: "DELETE", headers: this.ctx.engineHeaders }).catch(() => undefined);
    if (run.signal.aborted) cancel();
    run.signal.addEventListener("abort", cancel, { once: true });
    try {
      return await this.stream(p, pod, session, run.signal, onFilled);
    } finally {
      run.signal.removeEventListener("abort", cancel);
    }
  }

  /** Reads one engine session's events to its end: the generated text and its usage. */
  private async stream(p: Prepared, pod: string, session: string, signal: AbortSignal, onFilled: (pod: string) => void): Promise<Generated> {
    const res = await fetch(`${session}/events`, { headers: { ...this.ctx.engineHeaders, accept: "text/event-stream" }, signal }).catch((err: unknown) => {
      throw new CallFailure("engine_lost", `engine ${pod} did not stream the session: ${(err as Error).message}`);
    });
    if (!res.ok || res.body === null) throw new CallFailure("engine_lost", `engine ${pod} answered ${res.status} for the session's events`);
    let text = "";
    let announced = false;
    let done: Extract<SessionEvent, { type: "done" }> | undefined;
    try {
      for await (const e of readEventStream<SessionEvent>(res.body)) {
        if (e.type !== "started" && !announced) {
          announced = true;
          this.ctx.prefixes.record(pod, p.chain);
          onFilled(pod);
        }
        if (e.type === "text") text += e.text;
        else if (e.type === "error") throw new CallFailure(e.code, e.message);
        else if (e.type === "done") done = e;
      }
    } catch (err) {
      if (err instanceof CallFailure) throw err;
      throw new CallFailure("engine_lost", `engine ${pod} stopped mid-generation: ${(err as Error).message}`);
    }
    if (done === undefined) throw new CallFailure("engine_lost", `engine ${pod} ended the stream before the session finished`);
    if (done.reason === "error" || done.reason === "cancelled") throw new CallFailure(done.reason === "error" ? "engine_error" : "cancelled", `the engine session ended: ${done.reason}`);
    const filledTokens = done.usage.prefilledTokens;
    this.ctx.metrics.programPrefixTokens.inc({ kind: "filled" }, filledTokens);
    this.ctx.metrics.programPrefixTokens.inc({ kind: "forked" }, Math.max(0, done.usage.promptTokens - filledTokens));
    return { value: text.trim(), pod, promptTokens: done.usage.promptTokens, prefilledTokens: filledTokens };
  }
}
