/**
 * @module Signed interrupts: a user or agent interrupt sent over NATS (agent
 * to agent by an engine, or by the router) carries
 * `Interlace-Signature: <key id>.<epoch ms>.<HMAC-SHA256 hex>` over the key
 * id, the subject, the time and the body, keyed with the interrupt key of the
 * target's namespace (tenant). Only that namespace's engines and the operator
 * hold it (runners publish on the same subjects but do not have it; another
 * namespace's key has another id and fails). The receiving engine drops
 * unsigned, badly signed, unknown-key, stale (older than {@link MAX_SKEW_MS})
 * and replayed interrupts, and counts them.
 *
 * Keys per namespace are derived from the operator's master interrupt key
 * (derived-keys.ts): one secret in the release namespace, and a namespace's
 * Secret reveals nothing about another's key. Rotation (key-ring.ts): the
 * operator writes the new key beside the previous one and its expiry
 * (`interrupt.key`, `interrupt.key.previous`, `interrupt.key.previous.valid-until`);
 * engines read the files again in place, senders sign with the new key, and a
 * verifier accepts both (the key id says which one signed) until the
 * previous key's grace window ends, so live sessions keep the interrupts
 * signed before the rotation.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { acceptedKeys, type KeyRingSource } from "./key-ring.js";

/** How far a signature's time may be from the receiver's clock. */
export const MAX_SKEW_MS = 120_000;

/** The public id of a key (8 hex characters): names the key in a signature without revealing it. */
export function interruptKeyId(key: string): string {
  return createHash("sha256").update(`interlace interrupt key id\n${key}`).digest("hex").slice(0, 8);
}

function mac(key: string, keyId: string, subject: string, at: number, body: string | Uint8Array): string {
  const h = createHmac("sha256", key);
  h.update(`${keyId}\n${subject}\n${at}\n`);
  h.update(body);
  return h.digest("hex");
}

/** The `Interlace-Signature` header value for `body` published on `subject`. */
export function signInterrupt(key: string, subject: string, body: string | Uint8Array, now = Date.now()): string {
  const id = interruptKeyId(key);
  return `${id}.${now}.${mac(key, id, subject, now, body)}`;
}

export type SignatureCheck = { ok: true } | { ok: false; reason: "unsigned" | "bad_signature" | "unknown_key" | "stale" | "replayed" };

/**
 * Verifies signatures against a key ring (the current key and, during a
 * rotation's grace window, the previous one; read at each check, so a ring
 * read from files follows rotations) and remembers the accepted ones
 * for {@link MAX_SKEW_MS} (one instance per receiver), so a captured message
 * cannot be replayed.
 */
export class InterruptVerifier {
  private readonly seen = new Map<string, number>();
  private readonly ring: (now: number) => readonly string[];
  private readonly ids = new Map<string, string>();

  /** `keys`: fixed keys (each accepted), or a ring (its current key, its previous one until it expires). */
  constructor(keys: string | readonly string[] | KeyRingSource) {
    if (typeof keys === "function") this.ring = (now) => acceptedKeys(keys(), now);
    else {
      const list = typeof keys === "string" ? [keys] : keys;
      if (list.length === 0) throw new Error("an interrupt verifier needs at least one key");
      this.ring = () => list;
    }
  }

  private keyFor(id: string, now: number): string | undefined {
    for (const k of this.ring(now)) {
      let kid = this.ids.get(k);
      if (kid === undefined) {
        if (this.ids.size > 16) this.ids.clear();
        kid = interruptKeyId(k);
        this.ids.set(k, kid);
      }
      if (kid === id) return k;
    }
    return undefined;
  }

  check(subject: string, body: Uint8Array, header: string | undefined, now = Date.now()): SignatureCheck {
    if (header === undefined || header === "") return { ok: false, reason: "unsigned" };
    const m = /^([0-9a-f]{8})\.(\d{1,16})\.([0-9a-f]{64})$/.exec(header);
    if (m === null) return { ok: false, reason: "bad_signature" };
    const key = this.keyFor(m[1]!, now);
    if (key === undefined) return { ok: false, reason: "unknown_key" };
    const at = Number(m[2]);
    const expected = Buffer.from(mac(key, m[1]!, subject, at, body), "hex");
    const got = Buffer.from(m[3]!, "hex");
    if (!timingSafeEqual(expected, got)) return { ok: false, reason: "bad_signature" };
    if (Math.abs(now - at) > MAX_SKEW_MS) return { ok: false, reason: "stale" };
    this.prune(now);
    if (this.seen.has(m[3]!)) return { ok: false, reason: "replayed" };
    this.seen.set(m[3]!, at);
    return { ok: true };
  }

  private prune(now: number): void {
    if (this.seen.size < 1024) return;
    for (const [sig, at] of this.seen) if (now - at > MAX_SKEW_MS) this.seen.delete(sig);
  }
}
