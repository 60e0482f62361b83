/**
 * @module Messages between the router replicas on a core NATS subject tree
 * (no stream): each replica names itself with a random id, so its own
 * messages, which come back to it, are skipped; a message that does not
 * parse is dropped and counted. Hot-prefix warming's arrivals and the
 * capacity queues' heads travel this way (warm-arrivals.ts, queue-heads.ts).
 */
import { randomUUID } from "node:crypto";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../common/src/index.js";
import { decodeToken, type PoolRef } from "../../common/src/protocol/index.js";

/** The pool a `<prefix>.<namespace>.<pool>` subject names (null: not one). */
export function poolOfSubject(subject: string, prefix: string): PoolRef | null {
  const parts = subject.split(".");
  if (parts.length !== 4 || `${parts[0]}.${parts[1]}` !== prefix) return null;
  try {
    return { namespace: decodeToken(parts[2]!), name: decodeToken(parts[3]!) };
  } catch {
    return null;
  }
}

export class ReplicaChannel<T> {
  /** This process's name on the subjects. */
  readonly router = randomUUID();

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
    /** What the messages carry, for the logs. */
    private readonly what: string,
  ) {}

  /**
   * Calls `receive` with every other replica's message on `subjects` that
   * `parse` accepts (it gets the subject and the JSON body, null: malformed);
   * `onMalformed` for each one dropped. Unsubscribe (or drain the connection) to stop.
   */
  listen(subjects: string, parse: (subject: string, body: unknown) => (T & { router: string }) | null, receive: (message: T) => void, onMalformed: () => void = () => {}): Subscription {
    return this.nc.subscribe(subjects, {
      callback: (err, msg) => {
        if (err !== null) return void this.log.warn({ err }, `${this.what} subscription failed`);
        let body: unknown;
        try {
          body = msg.json();
        } catch {
          body = undefined;
        }
        const message = parse(msg.subject, body);
        if (message === null) {
          onMalformed();
          return void this.log.warn({ subject: msg.subject }, `malformed ${this.what} dropped`);
        }
        if (message.router !== this.router) receive(message);
      },
    });
  }

  /** Sends `body` (this replica's name added) on `subject`; closing or closed, it is dropped. */
  publish(subject: string, body: object): void {
    try {
      this.nc.publish(subject, JSON.stringify({ router: this.router, ...body }));
    } catch (err) {
      this.log.debug({ err }, `${this.what} not published`);
    }
  }
}
