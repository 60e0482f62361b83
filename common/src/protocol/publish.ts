/**
 * @module Publishing protocol messages through JetStream: the retry loop
 * every publisher shares (a disconnect or a lost acknowledgement is retried
 * with capped exponential backoff; the message id makes retries safe), and
 * sending a user or agent interrupt to a live session — the path a
 * `POST /v1/sessions/{id}/interrupts` takes when the session lives on another
 * engine pod (the router), and the path of agent-to-agent messages. An
 * interrupt is stored in the namespace's interrupt stream, so it survives the
 * target engine reconnecting; the engine injects it as an `[INTR]` block.
 */
import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { encodeInterrupt, type Encoded } from "./codec.js";
import type { InterruptMessage } from "./messages.js";
import { Header } from "./headers.js";
import { interruptSubject, type EnginePodRef } from "./subjects.js";
import { signInterrupt } from "../security/interrupt-signature.js";
import { PROTOCOL_VERSION } from "./version.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Backoff before retry `attempt` (0-based): 50 ms doubling, at most 1 s. */
export function publishBackoffMs(attempt: number): number {
  return Math.min(1_000, 50 * 2 ** Math.min(attempt, 5));
}

export interface PublishRetryOptions {
  /** How long to wait for the acknowledgement of one attempt, ms (re-read before each attempt). */
  timeoutMs: () => number;
  /** Checked before each attempt: false stops the loop (the call was settled meanwhile). */
  active?: () => boolean;
  /**
   * Told about each failed attempt (0-based) before its backoff; returns
   * false to give up (the connection is closed, the stream is gone).
   */
  onFailure: (err: Error, attempt: number) => boolean | Promise<boolean>;
}

/** Publishes until JetStream stores the message; null when stopped or given up. */
export async function publishWithRetry(js: JetStreamClient, subject: string, message: Encoded, options: PublishRetryOptions): Promise<PubAck | null> {
  for (let attempt = 0; options.active?.() ?? true; attempt++) {
    try {
      return await js.publish(subject, message.data, {
        headers: message.headers,
        timeout: options.timeoutMs(),
        ...(message.msgID !== undefined ? { msgID: message.msgID } : {}),
      });
    } catch (err) {
      if (!(options.active?.() ?? true)) return null;
      if (!(await options.onFailure(err instanceof Error ? err : new Error(String(err)), attempt))) return null;
      await sleep(publishBackoffMs(attempt));
    }
  }
  return null;
}

export interface SendInterruptOptions {
  /** The engine pod holding the session (and its namespace: interrupts never cross tenants). */
  engine: EnginePodRef;
  sessionId: string;
  kind: "user" | "agent";
  value: string;
  /** The id the model sees; also the de-duplication key when given. */
  id?: string;
  /** The sender (an agent's app/session), for logs. */
  from?: string;
  /** The interrupt key: signs the message so the engine accepts it (engines drop unsigned interrupts when they hold a key). */
  signingKey?: string;
}

/** Publishes the interrupt and resolves once JetStream has stored it. */
export async function sendInterrupt(js: JetStreamClient, options: SendInterruptOptions): Promise<void> {
  const body: InterruptMessage = { v: PROTOCOL_VERSION, type: "interrupt", sessionId: options.sessionId, kind: options.kind, value: options.value };
  if (options.id !== undefined) body.id = options.id;
  if (options.from !== undefined) body.from = options.from;
  const msg = encodeInterrupt(body, options.id !== undefined ? `intr:${options.engine.namespace}:${options.engine.pod}:${options.sessionId}:${options.id}` : undefined);
  const subject = interruptSubject(options.engine, options.sessionId);
  if (options.signingKey !== undefined) msg.headers.set(Header.Signature, signInterrupt(options.signingKey, subject, msg.data));
  await js.publish(subject, msg.data, {
    headers: msg.headers,
    ...(msg.msgID !== undefined ? { msgID: msg.msgID } : {}),
  });
}
