/**
 * @module Signed interrupts: a user or agent interrupt sent over NATS (by the
 * router, or agent to agent by an engine) carries
 * `Interlace-Signature: <epoch ms>.<HMAC-SHA256 hex>` over the subject, the
 * time and the body, keyed with the interrupt key that only engines and the
 * router hold (runners publish on the same subjects but do not have it).
 * The receiving engine drops unsigned, badly signed, stale (older than
 * {@link MAX_SKEW_MS}) and replayed interrupts, and counts them.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** How far a signature's time may be from the receiver's clock. */
export const MAX_SKEW_MS = 120_000;

function mac(key: string, subject: string, at: number, body: string | Uint8Array): string {
  const h = createHmac("sha256", key);
  h.update(`${subject}\n${at}\n`);
  h.update(body);
  return h.digest("hex");
}

/** The `Interlace-Signature` header value for `body` published on `subject`. */
export function signInterrupt(key: string, subject: string, body: string | Uint8Array, now = Date.now()): string {
  return `${now}.${mac(key, subject, now, body)}`;
}

export type SignatureCheck = { ok: true } | { ok: false; reason: "unsigned" | "bad_signature" | "stale" | "replayed" };

/**
 * Verifies signatures and remembers the accepted ones for {@link MAX_SKEW_MS}
 * (one instance per receiver), so a captured message cannot be replayed.
 */
export class InterruptVerifier {
  private readonly seen = new Map<string, number>();

  constructor(private readonly key: string) {}

  check(subject: string, body: Uint8Array, header: string | undefined, now = Date.now()): SignatureCheck {
    if (header === undefined || header === "") return { ok: false, reason: "unsigned" };
    const m = /^(\d{1,16})\.([0-9a-f]{64})$/.exec(header);
    if (m === null) return { ok: false, reason: "bad_signature" };
    const at = Number(m[1]);
    const expected = Buffer.from(mac(this.key, subject, at, body), "hex");
    const got = Buffer.from(m[2]!, "hex");
    if (!timingSafeEqual(expected, got)) return { ok: false, reason: "bad_signature" };
    if (Math.abs(now - at) > MAX_SKEW_MS) return { ok: false, reason: "stale" };
    this.prune(now);
    if (this.seen.has(m[2]!)) return { ok: false, reason: "replayed" };
    this.seen.set(m[2]!, at);
    return { ok: true };
  }

  private prune(now: number): void {
    if (this.seen.size < 1024) return;
    for (const [sig, at] of this.seen) if (now - at > MAX_SKEW_MS) this.seen.delete(sig);
  }
}
