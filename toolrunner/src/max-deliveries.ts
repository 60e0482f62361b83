/**
 * @module Answers calls that ran out of deliveries. JetStream leaves such a
 * call in the pool's queue and emits a MAX_DELIVERIES advisory; the
 * `INTERLACE_MAXDELIVER` stream keeps those advisories and each pool has a
 * durable consumer of its own, so whichever runner of the pool is alive —
 * now or after a restart — reads the advisory, fetches the call message,
 * publishes a `max_deliveries` error result to the call's session (with its
 * token, through the interrupt stream, so an engine that was disconnected
 * still gets it), records it in the effect log, removes the call from the
 * queue and acks the advisory.
 */
import type { JetStreamClient, JetStreamManager, ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import { ErrorCode, type Logger } from "../../common/src/index.js";
import {
  CONSUME_EXPIRES_MS,
  ensureMaxDeliverConsumer,
  ensureMaxDeliverStream,
  Header,
  MAXDELIVER_STREAM,
  MessageKind,
  parseCallMessage,
  poolStream,
  PROTOCOL_VERSION,
  type PoolRef,
  type ResultMessage,
} from "../../common/src/protocol/index.js";
import { errorOutcome } from "../../common/src/wire/index.js";
import type { EffectLog } from "./effect-log.js";
import type { ToolRunnerMetrics } from "./metrics.js";

interface Advisory {
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

export interface MaxDeliveriesOptions {
  jsm: JetStreamManager;
  js: JetStreamClient;
  pool: PoolRef;
  runnerId: string;
  log: Logger;
  metrics: ToolRunnerMetrics;
  effects: EffectLog;
  /** Publishes a result until stored (the runner's own publish path). */
  publish: (subject: string, result: ResultMessage, callMsgId: string) => Promise<boolean>;
}

export class MaxDeliveriesResponder {
  private messages: ConsumerMessages | null = null;

  private constructor(private readonly o: MaxDeliveriesOptions) {}

  static async start(o: MaxDeliveriesOptions): Promise<MaxDeliveriesResponder> {
    await ensureMaxDeliverStream(o.jsm);
    const name = await ensureMaxDeliverConsumer(o.jsm, o.pool);
    const r = new MaxDeliveriesResponder(o);
    const consumer = await o.js.consumers.get(MAXDELIVER_STREAM, name);
    r.messages = await consumer.consume({ max_messages: 16, expires: CONSUME_EXPIRES_MS, callback: (m) => void r.onAdvisory(m) });
    return r;
  }

  private async onAdvisory(m: JsMsg): Promise<void> {
    try {
      const a = m.json<Advisory>();
      const stream = poolStream(this.o.pool);
      if (a.stream !== stream || typeof a.stream_seq !== "number") {
        m.term();
        return;
      }
      const stored = await this.o.jsm.streams.getMessage(stream, { seq: a.stream_seq }).catch(() => null);
      if (stored === null) {
        // Already answered and removed (another runner, or an earlier attempt of ours).
        m.ack();
        return;
      }
      const call = parseCallMessage(stored.data);
      const callMsgId = stored.header.get(Header.MsgId) || `${stream}:${a.stream_seq}`;
      if (call.ok) {
        const c = call.value;
        const message = `tool "${c.tool}" (pool ${this.o.pool.namespace}/${this.o.pool.name}) failed on all ${a.deliveries} deliveries: its runner died or lost its connection each time`;
        const result: ResultMessage = {
          v: PROTOCOL_VERSION,
          type: MessageKind.Result,
          callId: c.callId,
          sessionId: c.sessionId,
          tool: c.tool,
          ...errorOutcome(ErrorCode.MaxDeliveries, message),
          runMs: 0,
          attempt: a.deliveries,
          runner: this.o.runnerId,
        };
        if (c.token !== undefined) result.token = c.token;
        await this.o.effects.finish(callMsgId, result);
        if (!(await this.o.publish(c.replyTo, result, callMsgId))) return;
        this.o.metrics.maxDeliveries.inc();
        this.o.log.warn({ callId: c.callId, session: c.sessionId, deliveries: a.deliveries }, "call ran out of deliveries; answered max_deliveries");
      }
      await this.o.jsm.streams.deleteMessage(stream, a.stream_seq, false).catch(() => undefined);
      m.ack();
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, "could not answer a max-deliveries advisory; it will be redelivered");
      m.nak(1_000);
    }
  }

  async stop(): Promise<void> {
    await this.messages?.close().catch(() => undefined);
  }
}
