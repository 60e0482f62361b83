/**
 * @module The tool runner: what a ToolPool pod runs. `concurrency` workers
 * each pull one call at a time from the pool's durable consumer (so a runner
 * never holds more calls than it can run), validate it, run the tool under
 * its timeout and the call's deadline, publish the result (or a clear error)
 * to the call's interrupt subject through JetStream, and only then ack.
 *
 * A runner that dies mid-call never acks, so JetStream redelivers the call to
 * another runner after `ackWaitMs` (runners extend it with `working()` while a
 * call runs). Effects are at most once: the call's start and result are
 * recorded in the effect log before the ack (see effect-log.ts), so a
 * redelivered call is answered from the record, and a non-idempotent tool that
 * started but left no result gets `outcome_unknown` instead of a second run.
 * The result carries `Nats-Msg-Id` derived from the call's, so a republished
 * result is dropped by JetStream, and the engine de-duplicates as well; it
 * echoes the call's token (results bound to calls). Calls that ran out of
 * deliveries are answered `max_deliveries` from the pool's advisories (see
 * max-deliveries.ts). A call taken after its `startBy` (the engine held it
 * for a runner of a pool at zero and gave up) is answered `no_runners` and
 * never run. Every bad input becomes an error result and the runner
 * keeps serving.
 */
import { hostname } from "node:os";
import { jetstream, jetstreamManager, type Consumer, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorCode, runUnderDeadline, type Logger, type StopReason } from "../../common/src/index.js";
import { connectNats, type NatsSecurity } from "../../common/src/security/nats-connect.js";
import {
  encodeResult,
  ensureIntrStream,
  ensurePoolStream,
  MessageKind,
  openEffectsBucket,
  openRunnersBucket,
  parseCallMessage,
  parseInterruptSubject,
  poolStream,
  PROTOCOL_VERSION,
  publishBackoffMs,
  publishWithRetry,
  readHeaders,
  resultMsgId,
  RUNNER_DEFAULTS,
  RUNNERS_CONSUMER,
  runnerKey,
  toolFromSubject,
  validateArguments,
  type PoolRef,
  type ResultMessage,
  type RunnerHeartbeat,
  type ToolRunnerConfig,
} from "../../common/src/protocol/index.js";
import { errorOutcome } from "../../common/src/wire/index.js";
import { EffectLog } from "./effect-log.js";
import { createToolSet, type ToolSet } from "./implementations/index.js";
import { MaxDeliveriesResponder } from "./max-deliveries.js";
import { ToolRunnerMetrics } from "./metrics.js";
import { truncateOutput } from "./truncate.js";

export interface ToolRunnerOptions {
  servers: string | string[];
  /** Credentials and TLS (default: none, an open server). */
  security?: NatsSecurity;
  config: ToolRunnerConfig;
  /** Unique per runner process (default: hostname-pid). */
  runnerId?: string;
  log: Logger;
  metrics?: ToolRunnerMetrics;
  /** Heartbeat period in the `interlace-runners` bucket (default 1000; engines count a runner gone after 4 s without one). */
  heartbeatMs?: number;
  /** How long one pull waits for a call before asking again (default 2000; also bounds shutdown). */
  pullExpiresMs?: number;
  /** On stop, how long in-flight calls may finish before they are aborted and handed back for redelivery (default 25000). */
  drainTimeoutMs?: number;
}

/** The abort reason of a call stopped because the runner is shutting down. */
const SHUTDOWN_REASON: StopReason = { kind: "cancelled", why: "the runner is shutting down" };
/** What {@link ToolRunner.run} returns for such a call. */
const SHUTDOWN = "shutdown" as const;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** The heartbeat's p90 wait covers the calls started this long ago at most. */
export const WAIT_WINDOW_MS = 10_000;
/** Waits kept at most (a burst beyond it is well represented by the rest). */
const MAX_WAITS = 4096;

/** `{ waitP90Ms }` of the waits (nearest rank), or nothing when no call started. */
function p90Of(waitsMs: readonly number[]): { waitP90Ms?: number } {
  if (waitsMs.length === 0) return {};
  const sorted = [...waitsMs].sort((a, b) => a - b);
  return { waitP90Ms: sorted[Math.ceil(0.9 * sorted.length) - 1] ?? 0 };
}

/** The token of a call whose body failed validation, so its error result still reaches the engine. */
function salvageToken(data: Uint8Array): string | undefined {
  try {
    const v: unknown = JSON.parse(new TextDecoder().decode(data));
    const t = typeof v === "object" && v !== null ? (v as { token?: unknown }).token : undefined;
    return typeof t === "string" && t.length <= 128 ? t : undefined;
  } catch {
    return undefined;
  }
}

type Outcome = { ok: true; output: string } | { ok: false; code: string; message: string };

export class ToolRunner {
  readonly metrics: ToolRunnerMetrics;
  readonly runnerId: string;
  readonly pool: PoolRef;
  private readonly log: Logger;
  private readonly settings: Required<Omit<ToolRunnerConfig, "namespace" | "pool" | "tools">>;
  private stopping = false;
  private puller: Promise<void> = Promise.resolve();
  /** Calls being handled now. */
  private readonly handlers = new Set<Promise<void>>();
  /** Wakes the pull loop when a handler finishes while all slots were busy. */
  private slotFreed: (() => void) | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private lastHeartbeat = 0;
  /** Publish-to-start waits of the calls started in the last WAIT_WINDOW_MS, for the heartbeat's p90 (the autoscaler's tool-wait signal). */
  private recentWaits: { at: number; ms: number }[] = [];
  private stopped: Promise<void> | null = null;
  /** Abort controllers of calls running now (aborted when a drain times out). */
  private readonly running = new Set<AbortController>();
  private maxDeliveries: MaxDeliveriesResponder | null = null;

  private constructor(
    private readonly options: ToolRunnerOptions,
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly consumer: Consumer,
    private readonly kv: KV,
    private readonly toolSet: ToolSet,
    private readonly effects: EffectLog,
  ) {
    const c = options.config;
    this.pool = { namespace: c.namespace, name: c.pool };
    this.runnerId = options.runnerId ?? `${hostname()}-${process.pid}`;
    this.metrics = options.metrics ?? new ToolRunnerMetrics();
    this.log = options.log.child({ component: "toolrunner", pool: `${c.namespace}/${c.pool}`, runner: this.runnerId });
    this.settings = {
      concurrency: c.concurrency ?? RUNNER_DEFAULTS.concurrency,
      timeoutMs: c.timeoutMs ?? RUNNER_DEFAULTS.timeoutMs,
      retries: c.retries ?? RUNNER_DEFAULTS.retries,
      maxDeliver: c.maxDeliver ?? RUNNER_DEFAULTS.maxDeliver,
      ackWaitMs: c.ackWaitMs ?? RUNNER_DEFAULTS.ackWaitMs,
      maxResultBytes: c.maxResultBytes ?? RUNNER_DEFAULTS.maxResultBytes,
    };
  }

  /** Connects, creates the pool's stream and consumer if needed, starts heartbeats and workers. */
  static async start(options: ToolRunnerOptions): Promise<ToolRunner> {
    const c = options.config;
    const toolSet = createToolSet(c, c.retries ?? RUNNER_DEFAULTS.retries);
    const pool = { namespace: c.namespace, name: c.pool };
    const nc = await connectNats({ servers: options.servers, name: `interlace-toolrunner-${c.namespace}-${c.pool}`, ...(options.security !== undefined ? { security: options.security } : {}) });
    try {
      const jsm = await jetstreamManager(nc);
      await ensureIntrStream(jsm, c.namespace);
      await ensurePoolStream(jsm, pool, {
        ackWaitMs: c.ackWaitMs ?? RUNNER_DEFAULTS.ackWaitMs,
        maxDeliver: c.maxDeliver ?? RUNNER_DEFAULTS.maxDeliver,
      });
      const js = jetstream(nc);
      const consumer = await js.consumers.get(poolStream(pool), RUNNERS_CONSUMER);
      const kv = await openRunnersBucket(nc);
      const effects = new EffectLog(await openEffectsBucket(nc), pool);
      const runner = new ToolRunner(options, nc, js, consumer, kv, toolSet, effects);
      runner.maxDeliveries = await MaxDeliveriesResponder.start({ jsm, js, pool, runnerId: runner.runnerId, log: runner.log, metrics: runner.metrics, effects, publish: (subject, result, callMsgId) => runner.publishResult(null, subject, result, callMsgId) });
      await runner.heartbeat();
      runner.heartbeatTimer = setInterval(() => void runner.heartbeat(), options.heartbeatMs ?? 1_000);
      runner.puller = runner.pull();
      runner.log.info({ tools: [...toolSet.tools.keys()], ...runner.settings }, "tool runner serving");
      return runner;
    } catch (err) {
      await toolSet.close();
      await nc.close();
      throw err;
    }
  }

  /** Null when ready, else why not (for /readyz). */
  notReadyReason(): string | null {
    if (this.stopping) return "shutting down";
    if (this.nc.isClosed()) return "NATS connection closed";
    const hb = this.options.heartbeatMs ?? 1_000;
    if (Date.now() - this.lastHeartbeat > 3 * hb) return "no heartbeat written recently (NATS unreachable?)";
    return null;
  }

  private recentWaitsMs(): number[] {
    const since = Date.now() - WAIT_WINDOW_MS;
    this.recentWaits = this.recentWaits.filter((w) => w.at >= since);
    return this.recentWaits.map((w) => w.ms);
  }

  private async heartbeat(): Promise<void> {
    if (this.stopping) return;
    const value: RunnerHeartbeat = {
      runner: this.runnerId,
      at: Date.now(),
      concurrency: this.settings.concurrency,
      inFlight: this.handlers.size,
      tools: [...this.toolSet.tools.keys()],
      ...p90Of(this.recentWaitsMs()),
    };
    try {
      await this.kv.put(runnerKey(this.pool, this.runnerId), JSON.stringify(value));
      this.lastHeartbeat = Date.now();
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, "heartbeat failed");
    }
  }

  /**
   * The pull loop: asks for as many calls as there are free slots (one pull
   * request per batch, not per call), starts each as it arrives, and waits for
   * a slot when all are busy, so the runner never holds a call it cannot start.
   */
  private async pull(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      const free = this.settings.concurrency - this.handlers.size;
      if (free <= 0) {
        await new Promise<void>((r) => (this.slotFreed = r));
        continue;
      }
      try {
        const batch = await this.consumer.fetch({ max_messages: free, expires: this.options.pullExpiresMs ?? 2_000 });
        for await (const m of batch) {
          if (this.stopping) {
            // Delivered after the stop began: not started, so hand it back for another runner.
            m.nak();
            continue;
          }
          this.startHandling(m);
        }
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        if (failures++ === 0) this.log.warn({ err: (err as Error).message }, "pull failed; retrying");
        await sleep(publishBackoffMs(failures));
      }
    }
  }

  private startHandling(m: JsMsg): void {
    this.metrics.inFlight.inc();
    const p = this.handle(m)
      .catch((err: unknown) => {
        this.log.error({ err }, "unexpected error handling a call; it will be redelivered");
        m.nak(1_000);
      })
      .finally(() => {
        this.handlers.delete(p);
        this.metrics.inFlight.dec();
        const wake = this.slotFreed;
        this.slotFreed = null;
        wake?.();
      });
    this.handlers.add(p);
  }

  private async handle(m: JsMsg): Promise<void> {
    const attempt = m.info.deliveryCount;
    // Routing metadata from headers, so even an unreadable body gets an answer.
    const { protocol: version, msgId, ...route } = readHeaders(m.headers);
    const callMsgIdValue = msgId ?? `${m.info.stream}:${m.seq}`;
    const subjectTool = toolFromSubject(this.pool, m.subject) ?? "?";
    if (attempt > 1) this.metrics.redeliveries.inc({ tool: subjectTool });

    const parsed = parseCallMessage(m.data);
    let outcome: Outcome;
    let tool = subjectTool;
    let runMs = 0;
    const token = parsed.ok ? parsed.value.token : salvageToken(m.data);
    let recorded = false;
    if (version !== undefined && version !== String(PROTOCOL_VERSION)) {
      outcome = { ok: false, code: ErrorCode.MalformedCall, message: `protocol version ${version} is not supported (runner speaks ${PROTOCOL_VERSION})` };
      this.metrics.malformed.inc();
    } else if (!parsed.ok) {
      outcome = { ok: false, code: ErrorCode.MalformedCall, message: `malformed call message: ${parsed.error}` };
      this.metrics.malformed.inc();
    } else {
      const call = parsed.value;
      tool = call.tool;
      Object.assign(route, { replyTo: call.replyTo, callId: call.callId, sessionId: call.sessionId });
      if (call.tool !== subjectTool) {
        outcome = { ok: false, code: ErrorCode.MalformedCall, message: `call names tool "${call.tool}" but was sent on the subject of "${subjectTool}"` };
        this.metrics.malformed.inc();
      } else {
        const waitMs = Math.max(0, Date.now() - call.publishedAt);
        this.metrics.queueDelay.observe(waitMs / 1000);
        if (this.recentWaits.length >= MAX_WAITS) this.recentWaits.shift();
        this.recentWaits.push({ at: Date.now(), ms: waitMs });
        // The effect log decides whether this delivery may run the tool (throws → nak, retried later).
        const begun = await this.effects.begin(callMsgIdValue, this.runnerId, attempt);
        recorded = true;
        const prior = begun.fresh ? null : begun.record;
        const idempotent = this.toolSet.tools.get(call.tool)?.spec.idempotent === true;
        if (begun.fresh && call.startBy !== undefined && Date.now() > call.startBy) {
          // Nobody started it, and the engine held it for a runner only until startBy, then told the model no_runners:
          // run now, it would be an effect nobody awaits. Its answer is stored like any result, so a redelivery replays it.
          const lateMs = Date.now() - call.startBy;
          this.metrics.expired.inc({ tool: call.tool });
          this.log.info({ callId: call.callId, session: call.sessionId, lateMs }, "call taken after its runner hold ended; answered no_runners, not run");
          outcome = { ok: false, code: ErrorCode.NoRunners, message: `${call.tool} reached a runner ${lateMs} ms after the engine stopped holding it for one; it was not run` };
        } else if (prior?.state === "done") {
          // Ran and stored before; its runner died before the ack. Answer again, do not run again.
          this.metrics.effects.inc({ outcome: "replayed" });
          if (route.replyTo !== undefined && (await this.publishResult(m, route.replyTo, { ...prior.result, attempt }, callMsgIdValue))) m.ack();
          return;
        } else if (!begun.fresh && !idempotent) {
          this.metrics.effects.inc({ outcome: "outcome_unknown" });
          const who = prior === null ? "an earlier delivery" : `runner ${prior.runner} (delivery ${prior.attempt})`;
          outcome = {
            ok: false,
            code: ErrorCode.OutcomeUnknown,
            message: `${call.tool} was started by ${who}, which stopped before reporting a result; the tool is not idempotent, so it was not run again and it may or may not have taken effect`,
          };
        } else {
          if (!begun.fresh) this.metrics.effects.inc({ outcome: "rerun" });
          const started = performance.now();
          const ran = await this.run(m, call.tool, call.arguments, call.deadline, { callId: call.callId, sessionId: call.sessionId, idempotencyKey: callMsgIdValue });
          if (ran === SHUTDOWN) {
            // Not finished in the drain window: hand it back so another runner runs it now.
            m.nak();
            return;
          }
          outcome = ran;
          runMs = performance.now() - started;
        }
      }
    }

    if (route.replyTo === undefined || parseInterruptSubject(route.replyTo)?.namespace !== this.pool.namespace || route.callId === undefined || route.sessionId === undefined) {
      // Nobody to tell: drop it for good rather than redeliver garbage.
      this.log.warn({ subject: m.subject, seq: m.seq, error: outcome.ok ? "missing routing headers" : outcome.message }, "call without a usable reply address dropped");
      this.metrics.calls.inc({ tool, outcome: ErrorCode.MalformedCall });
      m.term("malformed call without a reply address");
      return;
    }

    const result: ResultMessage = {
      v: PROTOCOL_VERSION,
      type: MessageKind.Result,
      callId: route.callId,
      sessionId: route.sessionId,
      tool,
      runMs,
      attempt,
      runner: this.runnerId,
      ...(outcome.ok
        ? { ok: true, output: "" }
        : // Error text (an HTTP body excerpt, an MCP message) is capped like any output.
          errorOutcome(outcome.code, truncateOutput(outcome.message, this.settings.maxResultBytes).text)),
    };
    if (token !== undefined) result.token = token;
    if (outcome.ok) {
      const cut = truncateOutput(outcome.output, this.settings.maxResultBytes);
      result.output = cut.text;
      if (cut.truncated) {
        result.truncated = true;
        this.metrics.truncated.inc({ tool });
      }
    }
    this.metrics.calls.inc({ tool, outcome: outcome.ok ? "ok" : outcome.code });
    // Stored before it is published and acked: a redelivery after this line republishes it.
    if (recorded) await this.effects.finish(callMsgIdValue, result);
    if (!(await this.publishResult(m, route.replyTo, result, callMsgIdValue))) return;
    // Fault injection for the at-most-once tests: die exactly between publish and ack.
    if (process.env["INTERLACE_FAULT"] === "exit-before-ack") process.kill(process.pid, "SIGKILL");
    // Acked only once the result is stored: a crash before this line means redelivery, never a lost result.
    // A plain ack (no confirmation round trip): if it is lost, the call is redelivered and run again, and
    // its second result is dropped by JetStream (same Nats-Msg-Id) and by the engine's de-duplication.
    m.ack();
  }

  /** Validates and runs one call; every failure is an outcome. */
  private async run(
    m: JsMsg,
    name: string,
    args: Record<string, unknown>,
    deadline: number,
    ids: { callId: string; sessionId: string; idempotencyKey: string },
  ): Promise<Outcome | typeof SHUTDOWN> {
    const tool = this.toolSet.tools.get(name);
    if (tool === undefined) {
      return { ok: false, code: ErrorCode.UnknownTool, message: `pool ${this.pool.namespace}/${this.pool.name} has no tool "${name}" (tools: ${[...this.toolSet.tools.keys()].join(", ")})` };
    }
    const valid = validateArguments(tool.spec.parameters, args, name);
    if (!valid.ok) return { ok: false, code: ErrorCode.InvalidArguments, message: `${name}: ${valid.error}` };
    const toolTimeout = tool.spec.timeoutMs ?? this.settings.timeoutMs;
    const budget = Math.min(toolTimeout, deadline - Date.now());
    if (budget <= 0) {
      this.metrics.timeouts.inc({ tool: name });
      return { ok: false, code: ErrorCode.ToolTimeout, message: `${name}: the call's deadline passed before it started` };
    }
    const controller = new AbortController();
    this.running.add(controller);
    // Keep the message ours while the tool runs longer than a fraction of ack_wait.
    const working = setInterval(() => m.working(), Math.max(200, Math.floor(this.settings.ackWaitMs / 3)));
    const started = performance.now();
    const ran = await runUnderDeadline((signal) => tool.impl.run(valid.value, { signal, idempotent: tool.spec.idempotent === true, ...ids }), {
      budgetMs: budget,
      controller,
    });
    this.metrics.duration.observe({ tool: name }, (performance.now() - started) / 1000);
    clearInterval(working);
    this.running.delete(controller);
    if (ran.ok) return { ok: true, output: typeof ran.value === "string" ? ran.value : String(ran.value) };
    if (!("stopped" in ran)) return { ok: false, code: ErrorCode.ToolFailed, message: `${name} failed: ${ran.error instanceof Error ? ran.error.message : String(ran.error)}` };
    if (ran.stopped === SHUTDOWN_REASON) return SHUTDOWN;
    this.metrics.timeouts.inc({ tool: name });
    const why = budget < toolTimeout ? "the call's deadline" : "its timeout";
    return { ok: false, code: ErrorCode.ToolTimeout, message: `${name} did not finish within ${budget} ms (${why})` };
  }

  /** Publishes through JetStream until stored (a disconnect is retried; the message id makes retries safe). */
  private async publishResult(m: JsMsg | null, subject: string, result: ResultMessage, callMsgIdValue: string): Promise<boolean> {
    const ack = await publishWithRetry(this.js, subject, encodeResult(result, resultMsgId(callMsgIdValue)), {
      timeoutMs: () => 5_000,
      onFailure: (err, attempt) => {
        if (this.nc.isClosed()) return false;
        this.metrics.publishRetries.inc();
        if (attempt === 0) this.log.warn({ err: err.message, callId: result.callId }, "result publish failed; retrying");
        m?.working();
        return true;
      },
    });
    return ack !== null;
  }

  /**
   * Graceful stop: no new pulls; in-flight calls finish and are acked (those
   * still running after `drainTimeoutMs` are aborted and nak'ed for
   * redelivery); heartbeat removed; connection drained.
   */
  stop(drainTimeoutMs = this.options.drainTimeoutMs ?? 25_000): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
      await this.maxDeliveries?.stop();
      // Wake a pull loop parked on a full runner; an open fetch ends within pullExpiresMs.
      this.slotFreed?.();
      const all = this.puller.then(() => Promise.all([...this.handlers]));
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([all.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), drainTimeoutMs)))]);
      clearTimeout(timer);
      if (!drained) {
        this.log.warn({ inFlight: this.running.size }, "drain timed out; handing in-flight calls back for redelivery");
        for (const c of this.running) c.abort(SHUTDOWN_REASON);
        await all;
      }
      await this.kv.delete(runnerKey(this.pool, this.runnerId)).catch(() => undefined);
      await this.toolSet.close();
      // Everything we sent was acknowledged or is a plain publish (nak): flush and close.
      // (drain() would also wait out the JetStream client's idle subscriptions.)
      await this.nc.flush().catch(() => undefined);
      await this.nc.close().catch(() => undefined);
      this.log.info("tool runner stopped");
    })();
    return this.stopped;
  }
}
