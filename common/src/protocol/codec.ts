/**
 * @module The codec of the three protocol messages (call, result,
 * interrupt): body and headers are built here and nowhere else, and read
 * back here. Routing metadata travels in headers as well as in the body so
 * that a receiver can answer a message whose body does not parse; a field a
 * later protocol feature needs (credentials, an attempt token) is added to
 * {@link wireHeaders} once and every message carries it.
 */
import { headers as natsHeaders, type MsgHdrs } from "@nats-io/transport-node";
import { parseJson, type Validated } from "../wire/validator.js";
import { Header, MessageKind } from "./headers.js";
import type { CallMessage, InterruptMessage, IntrMessage, ResultMessage } from "./messages.js";
import { validateCallMessage, validateInterruptMessage, validateResultMessage } from "./validate.js";
import { PROTOCOL_VERSION } from "./version.js";

/** A message ready for `js.publish(subject, data, { headers, msgID })`. */
export interface Encoded {
  data: string;
  headers: MsgHdrs;
  /** JetStream de-duplication key (`Nats-Msg-Id`), when the message has one. */
  msgID?: string;
}

/** Header values a message may carry besides the protocol version (always set). */
export type HeaderFields = Partial<Record<Exclude<Header, typeof Header.Protocol | typeof Header.MsgId>, string | undefined>>;

/** The one place protocol headers are built: the version, then the given fields. */
export function wireHeaders(fields: HeaderFields): MsgHdrs {
  const h = natsHeaders();
  h.set(Header.Protocol, String(PROTOCOL_VERSION));
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) h.set(name, value);
  return h;
}

function encoded(body: unknown, headers: MsgHdrs, msgID: string | undefined): Encoded {
  return { data: JSON.stringify(body), headers, ...(msgID !== undefined ? { msgID } : {}) };
}

/** A call for a tool pool's subject; `msgID` makes publish retries store it once. */
export function encodeCall(call: CallMessage, msgID: string): Encoded {
  const h = wireHeaders({
    [Header.CallId]: call.callId,
    [Header.SessionId]: call.sessionId,
    [Header.Deadline]: String(call.deadline),
    [Header.ReplyTo]: call.replyTo,
  });
  return encoded(call, h, msgID);
}

/** A tool's result for the call's reply subject; failed results carry their code in a header. */
export function encodeResult(result: ResultMessage, msgID: string): Encoded {
  const h = wireHeaders({
    [Header.Kind]: MessageKind.Result,
    [Header.CallId]: result.callId,
    [Header.SessionId]: result.sessionId,
    [Header.ErrorCode]: result.error?.code,
  });
  return encoded(result, h, msgID);
}

/** A user or agent interrupt for a session's interrupt subject. */
export function encodeInterrupt(message: InterruptMessage, msgID?: string): Encoded {
  const h = wireHeaders({ [Header.Kind]: MessageKind.Interrupt, [Header.SessionId]: message.sessionId });
  return encoded(message, h, msgID);
}

/** What the headers of a received message say, each field absent when missing or empty. */
export interface HeaderRoute {
  protocol?: string;
  callId?: string;
  sessionId?: string;
  replyTo?: string;
  msgId?: string;
}

/** Reads the routing headers of a received message. */
export function readHeaders(h: MsgHdrs | undefined): HeaderRoute {
  const route: HeaderRoute = {};
  const put = (key: keyof HeaderRoute, name: Header): void => {
    const v = h?.get(name);
    if (v) route[key] = v;
  };
  put("protocol", Header.Protocol);
  put("callId", Header.CallId);
  put("sessionId", Header.SessionId);
  put("replyTo", Header.ReplyTo);
  put("msgId", Header.MsgId);
  return route;
}

/** Parses and validates a call message body. */
export function parseCallMessage(data: Uint8Array | string): Validated<CallMessage> {
  const json = parseJson(data);
  return json.ok ? validateCallMessage(json.value) : json;
}

/** Parses and validates what arrived on an interrupt subject: a result or an interrupt. */
export function parseIntrMessage(data: Uint8Array | string): Validated<IntrMessage> {
  const json = parseJson(data);
  if (!json.ok) return json;
  const type = (json.value as { type?: unknown } | null)?.type;
  if (type === MessageKind.Result) return validateResultMessage(json.value);
  if (type === MessageKind.Interrupt) return validateInterruptMessage(json.value);
  return { ok: false, error: `message type must be "result" or "interrupt", got ${JSON.stringify(type ?? null)}` };
}
