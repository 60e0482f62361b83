/**
 * @module Per-namespace keys derived from one master key per purpose: the
 * operator keeps each master in the release namespace's trust root and
 * writes into an app namespace only that namespace's derived key. HMAC is
 * one-way, so a tenant's key says nothing about the master or another
 * tenant's, and rotating a master rotates every namespace at once.
 */
import { createHmac } from "node:crypto";

/** What a key is for: one master per purpose, so no key does two jobs. */
export type KeyPurpose = "interrupt" | "owner-tag";

/** The key of `namespace` for `purpose`, derived from that purpose's master key (64 hex characters). */
export function namespaceKey(masterKey: string, purpose: KeyPurpose, namespace: string): string {
  return createHmac("sha256", masterKey).update(`interlace ${purpose} key\n${namespace}`).digest("hex");
}
