/**
 * @module The NATS executor: sends each call to its tool pool over JetStream
 * and turns what comes back on this engine pod's interrupt subjects into
 * results and interrupts.
 *
 * - A call is published on `interlace.tools.<ns>.<pool>.<tool>` (the pool's
 *   work-queue stream) with `Nats-Msg-Id` = the call's identity, so publish
 *   retries across a reconnect store it once. Its result comes back on
 *   `interlace.intr.<ns>.<pod>.<session>`, read through this pod's durable
 *   consumer of its namespace's `INTERLACE_INTR_<ns>` stream, and is matched
 *   to the pending call.
 * - A pool with no stream at all fails the call at once with `no_runners`. A
 *   pool whose stream exists but has no live runner (no fresh heartbeat in
 *   `interlace-runners`: scaled to zero, or its runners starting) gets the
 *   call published anyway (JetStream keeps it, and the backlog is what makes
 *   the autoscaler wake the pool) and the call waits up to `runnerHoldMs` for
 *   a runner; if none comes up it fails with `no_runners` naming the hold.
 *   Such a call carries its `startBy` (the hold's end): a runner that takes
 *   it later answers `no_runners` (dropped here as late) and does not run it.
 *   (The engine cannot delete it from the stream: its NATS identity may not,
 *   as stream names cannot be narrowed to its namespace.)
 *   With `runnerHoldMs` 0 such a call fails at once, unsent.
 * - The call's deadline is enforced here (`tool_timeout`); a call whose
 *   message ran out of deliveries gets a `max_deliveries` result from its
 *   pool's runners, which read JetStream's advisories from a stream (durable:
 *   it reaches this executor through its interrupt consumer even if it was
 *   disconnected when the deliveries ran out).
 * - Every call carries a fresh secret token that the runner echoes; a result
 *   without the pending call's token is forged (or replayed into another
 *   session) and is dropped and counted, never delivered.
 * - A result for a call that already completed is counted as a duplicate and
 *   never delivered twice; user/agent interrupts go to the engine's inbox,
 *   only when signed with the interrupt key if this executor holds one.
 *
 * `execute` never rejects; every failure is an `ok: false` result.
 */
import { jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Registry } from "prom-client";
import { ErrorCode, type Logger } from "../../../common/src/index.js";
import { callTokenMatches, newCallToken } from "../../../common/src/security/call-token.js";
import { InterruptVerifier } from "../../../common/src/security/interrupt-signature.js";
import type { KeyRingSource } from "../../../common/src/security/key-ring.js";
import { connectNats, type NatsSecurity } from "../../../common/src/security/nats-connect.js";
import {
  CONSUME_EXPIRES_MS,
  callMsgId,
  encodeCall,
  Header,
  enginePodConsumer,
  ensureEngineConsumer,
  ensureIntrStream,
  interruptSubject,
  intrStream,
  MessageKind,
  openRunnersBucket,
  parseIntrMessage,
  parseInterruptSubject,
  poolStream,
  publishWithRetry,
  sendInterrupt,
  PROTOCOL_VERSION,
  toolSubject,
  type CallMessage,
  type InterruptMessage,
  type PoolRef,
  type ResultMessage,
} from "../../../common/src/protocol/index.js";
import { errorOutcome } from "../../../common/src/wire/index.js";
import type { InterruptSink } from "../engine/index.js";
import type { Executor, ToolCall, ToolResult } from "./executor.js";
import { NatsExecutorMetrics } from "./nats/metrics.js";
import { callKey, FinishedCalls, type Finish } from "./nats/pending-calls.js";
import { RunnerRegistry } from "./nats/runner-registry.js";
import { foreignPoolReason } from "./nats/tenant-pools.js";

export interface NatsExecutorOptions {
  /** NATS server URL(s). */
  servers: string | string[];
  /** Credentials and TLS (default: none, an open server). */
  security?: NatsSecurity;
  /**
   * Key of signed interrupts (shared by engines and the router): when set,
   * user/agent interrupts arriving over NATS must carry a valid signature,
   * and this executor signs the ones it sends. Unset: an open development setup.
   */
  interruptKey?: string | KeyRingSource;
  /** The namespace's previous interrupt key during a rotation's grace window: still verifies, never signs (a fixed key; a ring carries its own). */
  previousInterruptKey?: string;
  /** This engine pod's namespace (its tenant): its interrupt stream is `INTERLACE_INTR_<namespace>`. */
  namespace: string;
  /** This engine pod's name: its interrupt subjects are `interlace.intr.<namespace>.<pod>.>`. */
  enginePod: string;
  /** Pool for tools whose spec names none. Without it such calls fail with `unknown_tool`. */
  defaultPool?: PoolRef;
  /** Where user/agent interrupts go: the engine's inbox (built before the engine, opened by it). */
  inbox?: InterruptSink;
  /** Where metrics are registered (default: a private registry). */
  registry?: Registry;
  log: Logger;
  /** A runner without a heartbeat for this long is gone (default 4000: runners beat every second). */
  runnerStaleAfterMs?: number;
  /** Wait for a publish acknowledgement this long before retrying (default 5000). */
  publishTimeoutMs?: number;
  /**
   * How long a call to a pool with no live runner waits for one to come up
   * (a pool at zero being woken), ms; bounded by the call's deadline.
   * Default 0: such a call fails at once with `no_runners`, unsent.
   */
  runnerHoldMs?: number;
}

interface Pending {
  call: ToolCall;
  pool: PoolRef;
  poolLabel: string;
  /** performance.now() just before the first publish. */
  startedAt: number;
  resolve: (result: ToolResult) => void;
  timer: NodeJS.Timeout;
  cleanup: () => void;
  /** The secret the call's result must echo. */
  token: string;
  /** Published to a pool with no live runner, and waiting for one (see runnerHoldMs). */
  awaitingRunner: boolean;
}

export class NatsExecutor implements Executor {
  readonly metrics: NatsExecutorMetrics;
  readonly registry: Registry;
  private readonly pending = new Map<string, Pending>();
  private readonly finished = new FinishedCalls();
  private readonly log: Logger;
  private closed = false;
  private messages: ConsumerMessages | null = null;
  private readonly verifier: InterruptVerifier | null;

  private constructor(
    private readonly options: NatsExecutorOptions,
    readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly runners: RunnerRegistry,
  ) {
    this.registry = options.registry ?? new Registry();
    this.metrics = new NatsExecutorMetrics(this.registry);
    this.log = options.log.child({ component: "nats-executor", pod: options.enginePod });
    const key = options.interruptKey;
    this.verifier = key === undefined ? null : new InterruptVerifier(typeof key === "function" ? key : [key, ...(options.previousInterruptKey !== undefined ? [options.previousInterruptKey] : [])]);
  }

  /** Connects, sets up the interrupt stream and this pod's consumer, and starts reading. */
  static async connect(options: NatsExecutorOptions): Promise<NatsExecutor> {
    const nc = await connectNats({ servers: options.servers, name: `interlace-engine-${options.enginePod}`, ...(options.security !== undefined ? { security: options.security } : {}) });
    try {
      const jsm = await jetstreamManager(nc);
      const js = jetstream(nc);
      await ensureIntrStream(jsm, options.namespace);
      await ensureEngineConsumer(jsm, { namespace: options.namespace, pod: options.enginePod });
      const kv = await openRunnersBucket(nc);
      const runners = new RunnerRegistry(kv, options.runnerStaleAfterMs ?? 4_000, options.log);
      await runners.start();
      const executor = new NatsExecutor(options, nc, js, jsm, runners);
      await executor.start();
      return executor;
    } catch (err) {
      await nc.close();
      throw err;
    }
  }


  /**
   * Sends a user or agent message to a session on any engine pod of this
   * namespace (agent-to-agent messages; the bus refuses other tenants'): it
   * arrives there as an `[INTR]` block. Resolves once stored.
   */
  async sendInterrupt(enginePod: string, sessionId: string, input: { kind: "user" | "agent"; value: string; id?: string; from?: string }): Promise<void> {
    const signingKey = this.signingKey();
    await sendInterrupt(this.js, { engine: { namespace: this.options.namespace, pod: enginePod }, sessionId, ...input, ...(signingKey !== undefined ? { signingKey } : {}) });
  }

  /** The key that signs now: the ring's current one (a rotation moves it). */
  private signingKey(): string | undefined {
    const key = this.options.interruptKey;
    return typeof key === "function" ? key().current : key;
  }

  /** Calls published and not yet completed. */
  get inFlight(): number {
    return this.pending.size;
  }

  private async start(): Promise<void> {
    const consumer = await this.js.consumers.get(intrStream(this.options.namespace), enginePodConsumer(this.options.enginePod));
    this.messages = await consumer.consume({
      max_messages: 512,
      // Short pulls: after a NATS node loss, interrupts resume in seconds, not ~30 s.
      expires: CONSUME_EXPIRES_MS,
      callback: (m) => this.onIntrMessage(m),
    });
    void (async () => {
      for await (const s of this.messages!.status()) {
        if (s.type === "heartbeats_missed" || s.type === "consumer_not_found" || s.type === "consumer_deleted") {
          this.log.warn({ status: s }, "interrupt consumer status");
        }
      }
    })().catch(() => undefined);
    await this.nc.flush();
  }

  execute(call: ToolCall, signal?: AbortSignal): Promise<ToolResult> {
    const pool = call.spec.pool ?? this.options.defaultPool;
    const fail = (code: string, message: string): ToolResult => ({ callId: call.id, ...errorOutcome(code, message) });
    if (this.closed) return Promise.resolve(fail(ErrorCode.Cancelled, "the executor is closed"));
    if (pool === undefined) return Promise.resolve(fail(ErrorCode.UnknownTool, `tool "${call.tool}" belongs to no tool pool`));
    const poolLabel = `${pool.namespace}/${pool.name}`;
    // Sent, a call to another namespace's pool would wait out its deadline for a result that cannot come.
    const foreign = foreignPoolReason(call.tool, pool, this.options.namespace);
    if (foreign !== null) return Promise.resolve(fail(ErrorCode.UnknownTool, foreign));
    if (signal?.aborted) return Promise.resolve(fail(ErrorCode.Cancelled, "the call was cancelled before it started"));
    const key = callKey(call.sessionId, call.id);
    if (this.pending.has(key)) return Promise.resolve(fail(ErrorCode.BadRequest, `call "${call.id}" of session "${call.sessionId}" is already in flight`));
    const budgetMs = call.deadline - Date.now();
    if (budgetMs <= 0) {
      this.metrics.timeouts.inc({ pool: poolLabel, tool: call.tool });
      return Promise.resolve(fail(ErrorCode.ToolTimeout, `tool "${call.tool}" was past its deadline before it was sent`));
    }

    return new Promise<ToolResult>((resolve) => {
      const onAbort = (): void => void this.settle(key, "cancelled", fail(ErrorCode.Cancelled, "the call was cancelled"));
      const timer = setTimeout(() => {
        // Still no runner at the deadline: say so, rather than blame the tool.
        if (this.pending.get(key)?.awaitingRunner === true) {
          this.failNoRunnerCameUp(key, budgetMs);
          return;
        }
        this.metrics.timeouts.inc({ pool: poolLabel, tool: call.tool });
        this.settle(key, "timeout", fail(ErrorCode.ToolTimeout, `tool "${call.tool}" (pool ${poolLabel}) did not complete within ${budgetMs} ms`));
      }, budgetMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      const entry: Pending = {
        call,
        pool,
        poolLabel,
        startedAt: performance.now(),
        resolve,
        timer,
        cleanup: () => signal?.removeEventListener("abort", onAbort),
        token: newCallToken(),
        awaitingRunner: false,
      };
      this.pending.set(key, entry);
      this.metrics.inFlight.set(this.pending.size);
      void this.send(key, entry).catch((err: unknown) => {
        this.settle(key, "failed", fail(ErrorCode.Internal, `could not send the call: ${(err as Error).message}`));
      });
    });
  }

  /** Resolves a pending call once; later attempts are no-ops. */
  private settle(key: string, how: Finish, result: ToolResult): boolean {
    const entry = this.pending.get(key);
    if (entry === undefined) return false;
    this.pending.delete(key);
    clearTimeout(entry.timer);
    entry.cleanup();
    this.finished.add(key, how);
    this.metrics.inFlight.set(this.pending.size);
    this.metrics.calls.inc({ pool: entry.poolLabel, tool: entry.call.tool, outcome: result.ok ? "ok" : (result.error?.code ?? "error") });
    const latencyMs = performance.now() - entry.startedAt;
    this.metrics.latency.observe({ pool: entry.poolLabel, tool: entry.call.tool }, latencyMs / 1000);
    if (how === "result" && result.runMs !== undefined) {
      this.metrics.routingOverhead.observe({ pool: entry.poolLabel }, Math.max(0, latencyMs - result.runMs) / 1000);
    }
    entry.resolve(result);
    return true;
  }

  private async send(key: string, entry: Pending): Promise<void> {
    const { call, pool } = entry;
    const pod = this.options.enginePod;
    const replyTo = interruptSubject({ namespace: this.options.namespace, pod }, call.sessionId);
    const msgId = callMsgId(pod, call.sessionId, call.id);
    const stream = poolStream(pool);
    const holdMs = this.options.runnerHoldMs ?? 0;
    if ((await this.runners.liveRunners(pool)) === 0) {
      if (holdMs <= 0 || (await this.streamMissing(stream))) {
        this.failNoRunners(key, entry);
        return;
      }
      entry.awaitingRunner = true;
    }
    const body: CallMessage = {
      v: PROTOCOL_VERSION,
      callId: call.id,
      sessionId: call.sessionId,
      tool: call.tool,
      arguments: call.arguments,
      deadline: call.deadline,
      replyTo,
      publishedAt: Date.now(),
      token: entry.token,
      // Held for a runner: no runner may start it after the hold, when the model has been told no_runners.
      ...(entry.awaitingRunner ? { startBy: Math.min(Date.now() + holdMs, call.deadline) } : {}),
    };
    const message = encodeCall(body, msgId);

    const publishTimeoutMs = this.options.publishTimeoutMs ?? 5_000;
    await publishWithRetry(this.js, toolSubject(pool, call.tool), message, {
      timeoutMs: () => Math.max(250, Math.min(publishTimeoutMs, call.deadline - Date.now())),
      active: () => this.pending.has(key) && !this.closed,
      onFailure: async (err, attempt) => {
        if (await this.streamMissing(stream)) {
          this.failNoRunners(key, entry);
          return false;
        }
        this.metrics.publishRetries.inc({ pool: entry.poolLabel });
        this.log.warn({ err: err.message, callId: call.id, session: call.sessionId, attempt }, "call publish failed; retrying");
        return this.pending.has(key);
      },
    });
    if (entry.awaitingRunner && this.pending.has(key)) await this.holdForRunner(key, entry, holdMs);
  }

  /**
   * The call is stored on the pool's stream and no runner serves the pool:
   * wait for one (the autoscaler wakes a pool at zero on its backlog) up to
   * the hold or the call's deadline, whichever is sooner.
   */
  private async holdForRunner(key: string, entry: Pending, holdMs: number): Promise<void> {
    const { call, pool, poolLabel } = entry;
    const waitMs = Math.min(holdMs, Math.max(0, call.deadline - Date.now()));
    this.log.info({ callId: call.id, session: call.sessionId, pool: poolLabel, holdMs: waitMs }, "no live runner for the pool; the call waits for one");
    const stop = new AbortController();
    const poll = setInterval(() => {
      if (!this.pending.has(key)) stop.abort();
    }, 250);
    let found = await this.runners.waitForRunner(pool, waitMs, stop.signal).finally(() => clearInterval(poll));
    // A runner takes calls only after its first heartbeat is stored: one that took this call before its startBy
    // (now past) is in the bucket, even if the watch has not shown it yet. Then its answer is awaited.
    if (!found && this.pending.has(key)) found = (await this.runners.liveRunners(pool)) > 0;
    this.metrics.runnerHolds.inc({ pool: poolLabel, outcome: found ? "runner" : this.pending.has(key) ? "timeout" : "ended" });
    entry.awaitingRunner = false;
    if (!found && this.pending.has(key)) this.failNoRunnerCameUp(key, holdMs);
  }

  /** True only when JetStream answers that the pool's stream does not exist. */
  private async streamMissing(stream: string): Promise<boolean> {
    try {
      await this.jsm.streams.info(stream);
      return false;
    } catch (err) {
      return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
    }
  }

  private failNoRunners(key: string, entry: Pending): void {
    const message = `no tool runner is serving pool ${entry.poolLabel} (tool "${entry.call.tool}"); the call was not sent`;
    this.settle(key, "failed", { callId: entry.call.id, ...errorOutcome(ErrorCode.NoRunners, message) });
  }

  private failNoRunnerCameUp(key: string, holdMs: number): void {
    const entry = this.pending.get(key);
    if (entry === undefined) return;
    const message =
      `no tool runner came up for pool ${entry.poolLabel} within ${holdMs} ms (the pool is scaled to zero and was not woken in time, or its runners cannot start); ` +
      `tool "${entry.call.tool}" was not run`;
    this.settle(key, "failed", { callId: entry.call.id, ...errorOutcome(ErrorCode.NoRunners, message) });
  }

  private onIntrMessage(m: JsMsg): void {
    const where = parseInterruptSubject(m.subject);
    const parsed = parseIntrMessage(m.data);
    if (!parsed.ok || where === null || where.sessionId !== parsed.value.sessionId) {
      this.metrics.droppedCompletions.inc({ reason: "invalid" });
      this.log.warn({ subject: m.subject, error: parsed.ok ? "session id differs from the subject's" : parsed.error }, "invalid message on an interrupt subject");
      m.term();
      return;
    }
    const msg = parsed.value;
    if (msg.type === MessageKind.Result) this.onResult(msg);
    else if (this.verifier !== null) {
      const check = this.verifier.check(m.subject, m.data, m.headers?.get(Header.Signature) || undefined);
      if (check.ok) this.onUserInterrupt(msg);
      else {
        this.metrics.droppedCompletions.inc({ reason: check.reason });
        this.log.warn({ subject: m.subject, session: msg.sessionId, reason: check.reason }, "interrupt without a valid signature dropped");
      }
    } else this.onUserInterrupt(msg);
    m.ack();
  }

  private onResult(msg: ResultMessage): void {
    const key = callKey(msg.sessionId, msg.callId);
    const entry = this.pending.get(key);
    if (entry !== undefined && !callTokenMatches(entry.token, msg.token)) {
      // Not from a runner that received this call: forged, or replayed from another call or session.
      this.metrics.droppedCompletions.inc({ reason: "forged" });
      this.log.warn({ callId: msg.callId, session: msg.sessionId, runner: msg.runner }, "result without the call's token dropped (forged or replayed)");
      return;
    }
    const result: ToolResult = { callId: msg.callId, ok: msg.ok, output: msg.output, runMs: msg.runMs };
    if (msg.error !== undefined) result.error = msg.error;
    if (this.settle(key, "result", result)) return;
    const how = this.finished.get(key);
    if (how === "result") {
      this.metrics.duplicateCompletions.inc();
      this.log.warn({ callId: msg.callId, session: msg.sessionId, attempt: msg.attempt }, "duplicate completion dropped");
    } else {
      this.metrics.droppedCompletions.inc({ reason: how === undefined ? "unknown_call" : "late" });
      this.log.info({ callId: msg.callId, session: msg.sessionId, finishedAs: how }, "result for a call that is no longer pending dropped");
    }
  }

  private onUserInterrupt(msg: InterruptMessage): void {
    const input: { id?: string; kind: "user" | "agent"; value: string } = { kind: msg.kind, value: msg.value };
    if (msg.id !== undefined) input.id = msg.id;
    const delivered = this.options.inbox?.post(msg.sessionId, input) ?? false;
    this.metrics.interrupts.inc({ kind: msg.kind, outcome: delivered ? "delivered" : "unknown_session" });
    if (!delivered) {
      this.metrics.droppedCompletions.inc({ reason: "unknown_session" });
      this.log.info({ session: msg.sessionId, kind: msg.kind }, "interrupt for an unknown session dropped");
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const [key, entry] of [...this.pending]) {
      this.settle(key, "cancelled", { callId: entry.call.id, ...errorOutcome(ErrorCode.Cancelled, "the executor is closing") });
    }
    this.runners.stop();
    await this.messages?.close().catch(() => undefined);
    await this.nc.drain().catch(() => undefined);
  }
}
