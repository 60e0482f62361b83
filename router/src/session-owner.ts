/**
 * @module Who owns a session opened through the router: the principal of the
 * API key that opened it, bound into the routed session id as a tag (an
 * HMAC of the id and the principal under a key every replica shares). Any
 * replica checks ownership from the id alone — replicas share no session
 * table — and a leaked session id is useless without its owner's API key.
 * With authentication off (no API keys) ids carry no tag and anyone may act.
 *
 * Rotation (key-ring.ts): tags are always made with the current key; a tag
 * made with the previous key is still accepted until that key's grace window
 * ends, so ids clients hold keep working across a rotation, and fail (403)
 * after it.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { ApiKeys } from "../../common/src/security/http-auth.js";
import { acceptedKeys, fixedKeyRing, type KeyRingSource } from "../../common/src/security/key-ring.js";

const TAG_CHARS = 22;

const tagUnder = (key: string, baseId: string, principal: string): string =>
  createHmac("sha256", `session-owner\n${key}`).update(`${baseId}\n${principal}`).digest("base64url").slice(0, TAG_CHARS);

export class SessionOwners {
  /** `ring` null: authentication off. */
  private constructor(private readonly ring: KeyRingSource | null) {}

  /**
   * The owner-tag key when the router has one (shared by every replica through
   * its Secret, held by nothing else; a ring read from its files follows
   * rotations); else a digest of the configured API keys (the same Secret on
   * every replica); null when there are no API keys.
   */
  static from(apiKeys: ApiKeys | null, ownerTagKey: string | KeyRingSource | undefined): SessionOwners {
    if (apiKeys === null) return new SessionOwners(null);
    if (typeof ownerTagKey === "function") return new SessionOwners(ownerTagKey);
    return new SessionOwners(fixedKeyRing(ownerTagKey ?? createHash("sha256").update([...apiKeys.keys()].sort().join("\n")).digest("hex")));
  }

  get enforced(): boolean {
    return this.ring !== null;
  }

  /** The tag for `baseId` owned by `principal`, under the current key (undefined when not enforced). */
  tag(baseId: string, principal: string): string | undefined {
    return this.ring === null ? undefined : tagUnder(this.ring().current, baseId, principal);
  }

  /** Whether `principal` owns `baseId` according to `tag` (made with the current key, or the previous one within its grace window). */
  owns(baseId: string, tag: string | undefined, principal: string, now = Date.now()): boolean {
    if (this.ring === null) return true;
    if (tag === undefined) return false;
    let ok = false;
    for (const key of acceptedKeys(this.ring(), now)) {
      const expected = tagUnder(key, baseId, principal);
      if (tag.length === expected.length && timingSafeEqual(Buffer.from(tag), Buffer.from(expected))) ok = true;
    }
    return ok;
  }
}
