/**
 * @module NATS header names of the Interlace protocol. Routing metadata
 * travels in headers as well as in the body so that a receiver can still
 * answer (with an error result) a message whose body does not parse.
 */

export const Header = {
  /** {@link PROTOCOL_VERSION} as a decimal string. */
  Protocol: "Interlace-Protocol",
  /** The call id the model sees in `[INTR] id [HEAD] ...`. */
  CallId: "Interlace-Call-Id",
  SessionId: "Interlace-Session-Id",
  /** Absolute deadline, epoch ms, decimal. */
  Deadline: "Interlace-Deadline",
  /** The interrupt subject the result goes to (JetStream replaces a message's reply subject with its ack subject). */
  ReplyTo: "Interlace-Reply-To",
  /** `result` (a tool completion) or `interrupt` (user / agent input) on interrupt subjects. */
  Kind: "Interlace-Kind",
  /** The {@link ErrorCode} of a failed result: errors carry their code in headers. */
  ErrorCode: "Interlace-Error-Code",
  /** `<epoch ms>.<HMAC>` of a user / agent interrupt (see common/src/security/interrupt-signature.ts). */
  Signature: "Interlace-Signature",
  /** JetStream de-duplication key (`PubHeaders.MsgIdHdr`). */
  MsgId: "Nats-Msg-Id",
} as const;

export type Header = (typeof Header)[keyof typeof Header];

/** Values of {@link Header.Kind}. */
export const MessageKind = { Result: "result", Interrupt: "interrupt" } as const;
export type MessageKind = (typeof MessageKind)[keyof typeof MessageKind];
