/**
 * @module The engine's inbox for user and agent interrupts that arrive from
 * outside the HTTP API (the NATS executor's interrupt subjects). It exists
 * before the engine does, so a transport is built with it; the engine opens it
 * once it runs and closes it on shutdown. Until then a post finds no session.
 */
import type { InterruptInput } from "./engine-api.js";

/** Where a transport delivers an interrupt for a session; false when the session is unknown or done. */
export interface InterruptSink {
  post(sessionId: string, input: InterruptInput & { kind: "user" | "agent" }): boolean;
}

export class InterruptInbox implements InterruptSink {
  private deliver: ((sessionId: string, input: InterruptInput) => boolean) | undefined;

  post(sessionId: string, input: InterruptInput & { kind: "user" | "agent" }): boolean {
    return this.deliver?.(sessionId, input) ?? false;
  }

  /** The engine starts reading. */
  open(deliver: (sessionId: string, input: InterruptInput) => boolean): void {
    if (this.deliver !== undefined) throw new Error("the interrupt inbox is already open (one engine per inbox)");
    this.deliver = deliver;
  }

  close(): void {
    this.deliver = undefined;
  }
}
