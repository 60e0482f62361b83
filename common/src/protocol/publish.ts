/**
 * @module Sending a user or agent interrupt to a live session over NATS: the
 * path a `POST /v1/sessions/{id}/interrupts` takes when the session lives on
 * another engine pod (the router), and the path of agent-to-agent messages.
 * The message is stored in the `INTERLACE_INTR` stream, so it survives the
 * target engine reconnecting; the engine injects it as an `[INTR]` block.
 */
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { Header, MessageKind } from "./headers.js";
import type { InterruptMessage } from "./messages.js";
import { interruptSubject } from "./subjects.js";
import { PROTOCOL_VERSION } from "./version.js";

export interface SendInterruptOptions {
  /** The engine pod holding the session. */
  enginePod: string;
  sessionId: string;
  kind: "user" | "agent";
  value: string;
  /** The id the model sees; also the de-duplication key when given. */
  id?: string;
  /** The sender (an agent's app/session), for logs. */
  from?: string;
}

/** Publishes the interrupt and resolves once JetStream has stored it. */
export async function sendInterrupt(js: JetStreamClient, options: SendInterruptOptions): Promise<void> {
  const body: InterruptMessage = { v: PROTOCOL_VERSION, type: "interrupt", sessionId: options.sessionId, kind: options.kind, value: options.value };
  if (options.id !== undefined) body.id = options.id;
  if (options.from !== undefined) body.from = options.from;
  const h = natsHeaders();
  h.set(Header.Protocol, String(PROTOCOL_VERSION));
  h.set(Header.Kind, MessageKind.Interrupt);
  h.set(Header.SessionId, options.sessionId);
  await js.publish(interruptSubject(options.enginePod, options.sessionId), JSON.stringify(body), {
    headers: h,
    ...(options.id !== undefined ? { msgID: `intr:${options.enginePod}:${options.sessionId}:${options.id}` } : {}),
  });
}
