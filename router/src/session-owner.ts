/**
 * @module Who owns a session opened through the router: the principal of the
 * API key that opened it, bound into the routed session id as a tag (an
 * HMAC of the id and the principal under a key every replica shares). Any
 * replica checks ownership from the id alone — replicas share no session
 * table — and a leaked session id is useless without its owner's API key.
 * With authentication off (no API keys) ids carry no tag and anyone may act.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { ApiKeys } from "../../common/src/security/http-auth.js";

const TAG_CHARS = 22;

export class SessionOwners {
  /** `key` null: authentication off. */
  private constructor(private readonly key: string | null) {}

  /**
   * The owner-tag key when the router has one (shared by every replica through
   * its Secret, held by nothing else); else a digest of the configured API
   * keys (the same Secret on every replica); null when there are no API keys.
   */
  static from(apiKeys: ApiKeys | null, ownerTagKey: string | undefined): SessionOwners {
    if (apiKeys === null) return new SessionOwners(null);
    const key = ownerTagKey ?? createHash("sha256").update([...apiKeys.keys()].sort().join("\n")).digest("hex");
    return new SessionOwners(`session-owner\n${key}`);
  }

  get enforced(): boolean {
    return this.key !== null;
  }

  /** The tag for `baseId` owned by `principal` (undefined when not enforced). */
  tag(baseId: string, principal: string): string | undefined {
    if (this.key === null) return undefined;
    return createHmac("sha256", this.key).update(`${baseId}\n${principal}`).digest("base64url").slice(0, TAG_CHARS);
  }

  /** Whether `principal` owns `baseId` according to `tag`. */
  owns(baseId: string, tag: string | undefined, principal: string): boolean {
    const expected = this.tag(baseId, principal);
    if (expected === undefined) return true;
    if (tag === undefined || tag.length !== expected.length) return false;
    return timingSafeEqual(Buffer.from(tag), Buffer.from(expected));
  }
}
