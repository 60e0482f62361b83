/**
 * @module A router's (or endpoint picker's) subscription to the engines' KV events
 * (protocol/kv-events), feeding the `events` prefix index. Malformed
 * messages are logged and dropped (a dropped one shows up as a gap, which
 * the index answers from the engine's heartbeat).
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../common/src/index.js";
import { ALL_KV_EVENTS, decodeToken, KV_EVENTS_PREFIX, validateKvEvent } from "../../common/src/protocol/index.js";
import type { EventPrefixIndex } from "./event-prefix-index.js";

/** The pool key (`namespace/name`) of a KV-event subject; null for anything else. */
export function kvEventsPool(subject: string): string | null {
  const parts = subject.split(".");
  if (parts.length !== 4 || `${parts[0]}.${parts[1]}` !== KV_EVENTS_PREFIX) return null;
  try {
    return `${decodeToken(parts[2]!)}/${decodeToken(parts[3]!)}`;
  } catch {
    return null;
  }
}

/** Subscribes `index` to the KV events (every pool's, or `subject`'s alone); returns the subscription (unsubscribe to stop). `onMalformed` is told of each message dropped. */
export function watchKvEvents(nc: NatsConnection, index: EventPrefixIndex, log: Logger, subject = ALL_KV_EVENTS, onMalformed: () => void = () => {}): Subscription {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err !== null) return void log.warn({ err }, "KV event subscription failed");
      const pool = kvEventsPool(msg.subject);
      let body: unknown;
      try {
        body = msg.json();
      } catch {
        body = undefined;
      }
      const event = validateKvEvent(body);
      if (pool === null || !event.ok) {
        onMalformed();
        return void log.warn({ subject: msg.subject, reason: event.ok ? "not a pool's KV-event subject" : event.error }, "malformed KV event dropped");
      }
      index.apply(pool, event.value);
    },
  });
}
