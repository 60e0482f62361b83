/**
 * Session ownership tags: a tag binds a routed session id to one principal,
 * every replica with the same keys computes the same tag, and with
 * authentication off nothing is enforced.
 */
import t from "tap";
import { parseApiKeys } from "../../common/src/security/http-auth.js";
import { SessionOwners } from "../../router/src/session-owner.js";
import { parseRoutedSessionId, routedSessionId } from "../../router/src/session-id.js";

const keys = parseApiKeys("alice:alice-key-0123456789\nbob:bob-key-0123456789abc");

t.test("a tag binds an id to its opener, across replicas", async (t) => {
  const a = SessionOwners.from(keys, "k".repeat(64));
  const b = SessionOwners.from(parseApiKeys("bob:bob-key-0123456789abc\nalice:alice-key-0123456789"), "k".repeat(64));
  const tag = a.tag("engine-0.s1", "alice")!;
  const id = routedSessionId("engine-0", "s1", tag);
  const parsed = parseRoutedSessionId(id)!;
  t.same(parsed, { pod: "engine-0", engineSessionId: "s1", base: "engine-0.s1", ownerTag: tag });
  t.ok(b.owns(parsed.base, parsed.ownerTag, "alice"), "another replica agrees");
  t.notOk(b.owns(parsed.base, parsed.ownerTag, "bob"), "another principal does not own it");
  t.notOk(b.owns("engine-0.s2", parsed.ownerTag, "alice"), "the tag does not move to another session");
  t.notOk(b.owns(parsed.base, undefined, "alice"), "no tag: refused");
  t.notOk(b.owns(parsed.base, "short", "alice"), "a malformed tag: refused");
  t.notOk(SessionOwners.from(keys, "x".repeat(64)).owns(parsed.base, parsed.ownerTag, "alice"), "a different key: refused");
  // Without an owner-tag key, replicas sharing the API key Secret still agree.
  const c = SessionOwners.from(keys, undefined);
  const d = SessionOwners.from(parseApiKeys("bob:bob-key-0123456789abc\nalice:alice-key-0123456789"), undefined);
  t.ok(d.owns("p.s", c.tag("p.s", "bob"), "bob"));
});

t.test("authentication off: ids carry no tag, nothing is enforced", async (t) => {
  const open = SessionOwners.from(null, "k".repeat(64));
  t.equal(open.enforced, false);
  t.equal(open.tag("engine-0.s1", "anonymous"), undefined);
  t.ok(open.owns("engine-0.s1", undefined, "anonymous"));
  t.same(parseRoutedSessionId("engine-0.s1"), { pod: "engine-0", engineSessionId: "s1", base: "engine-0.s1" });
  t.equal(parseRoutedSessionId("engine-0.s1.tag.more"), null, "at most one tag");
});

t.test("rotation: tags issued under the previous key are owned until its window ends, new tags use the new key", async (t) => {
  const now = 1_800_000_000_000;
  const before = SessionOwners.from(keys, "old-".repeat(16));
  const issued = before.tag("engine-0.s1", "alice")!;
  const ring = { current: "new-".repeat(16), previous: { key: "old-".repeat(16), validUntil: now + 600_000 } };
  const after = SessionOwners.from(keys, () => ring);
  t.ok(after.owns("engine-0.s1", issued, "alice", now), "an id issued before the rotation works within the window");
  t.notOk(after.owns("engine-0.s1", issued, "bob", now), "and is still alice's only");
  t.notOk(after.owns("engine-0.s1", issued, "alice", now + 600_000), "refused (403) once the window ends");
  t.not(after.tag("engine-0.s1", "alice"), issued, "new tags are made with the new key");
  t.ok(after.owns("engine-0.s1", after.tag("engine-0.s1", "alice"), "alice", now + 600_000), "and stay valid after the window");
  const revoked = SessionOwners.from(keys, () => ({ current: "new-".repeat(16) }));
  t.notOk(revoked.owns("engine-0.s1", issued, "alice", now), "grace 0 (no previous key): refused at once");
});
