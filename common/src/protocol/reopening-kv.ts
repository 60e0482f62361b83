/**
 * @module KV buckets that are created again when a write finds them gone.
 *
 * The heartbeat, presence and reservation buckets are memory buckets: they
 * hold only what is rewritten every few seconds. They do not survive a
 * restart of a single-node NATS (or the loss of every replica), and nothing
 * created them again, so each writer failed until its process restarted:
 * the routers saw no engine, and placement stopped for good. Through
 * {@link reopening}, a read or write that finds the bucket gone creates it
 * again (the opener is the bucket's idempotent create) and is tried once
 * more; a watch restarted after that finds the new bucket.
 */
import type { KV } from "@nats-io/kv";

/** How nats.js reports a write or read to a bucket whose stream no server holds. */
export function isBucketGone(err: unknown): boolean {
  const e = err as { name?: unknown; message?: unknown } | null;
  if (e === null || typeof e !== "object") return false;
  return e.name === "JetStreamNotEnabled" || /no responders|stream not found/i.test(String(e.message));
}

/** The operations that create the bucket again when it is gone. */
const RETRIED = new Set<PropertyKey>(["put", "create", "update", "get", "delete", "purge"]);

/** `kv`, with its reads and writes creating the bucket again (by `open`) when it is gone. */
export function reopening(kv: KV, open: () => Promise<KV>): KV {
  let current = kv;
  return new Proxy(kv, {
    get(_target, prop) {
      const value: unknown = Reflect.get(current, prop);
      if (typeof value !== "function") return value;
      if (!RETRIED.has(prop)) return (...args: unknown[]): unknown => Reflect.apply(value, current, args);
      return async (...args: unknown[]): Promise<unknown> => {
        try {
          return await Reflect.apply(value, current, args);
        } catch (err) {
          if (!isBucketGone(err)) throw err;
          current = await open();
          return Reflect.apply(Reflect.get(current, prop) as (...a: unknown[]) => unknown, current, args);
        }
      };
    },
  });
}
