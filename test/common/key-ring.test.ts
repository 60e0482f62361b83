/**
 * Key rings (common/src/security/key-ring.ts): after a rotation the current
 * key alone signs and the previous one is accepted until its window ends,
 * then refused; grace 0 keeps no previous key; a ring read from files
 * follows the files as the kubelet rewrites them, keeps its last good ring
 * when a read fails, and never accepts a previous key without its expiry.
 */
import t from "tap";
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acceptedKeys, fixedKeyRing, keyRingEntries, keyRingFromFiles, keyRingOf, parseValidUntil, presentedKey, rotateRing } from "../../common/src/security/key-ring.js";
import { apiKeyDigest, apiKeysFromEnv, apiKeysFromRing, bearerHeaders } from "../../common/src/security/http-auth.js";

const dir = mkdtempSync(join(tmpdir(), "interlace-keyring-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test("rotation: the previous key is accepted until its window ends; grace 0 revokes at once", async (t) => {
  const now = 1_800_000_000_000;
  const ring = rotateRing({ current: "old" }, "new", 600_000, now);
  t.same(ring, { current: "new", previous: { key: "old", validUntil: now + 600_000 } });
  t.same(acceptedKeys(ring, now), ["new", "old"], "both inside the window");
  t.same(acceptedKeys(ring, now + 599_999), ["new", "old"]);
  t.same(acceptedKeys(ring, now + 600_000), ["new"], "the old one refused once it ends");
  t.same(rotateRing({ current: "old" }, "new", 0, now), { current: "new" }, "grace 0: no previous key");
  const twice = rotateRing(ring, "newer", 600_000, now + 1);
  t.same(acceptedKeys(twice, now + 1), ["newer", "new"], "a second rotation replaces the previous key (one window at a time)");
});

t.test("a ring survives a round trip through a Secret's entries; a previous key without a time is dropped", async (t) => {
  const ring = { current: "c", previous: { key: "p", validUntil: Date.parse("2026-11-27T00:10:00.000Z") } };
  const entries = keyRingEntries("interrupt.key", ring);
  t.same(entries, { "interrupt.key": "c", "interrupt.key.previous": "p", "interrupt.key.previous.valid-until": "2026-11-27T00:10:00.000Z" });
  t.same(keyRingOf("interrupt.key", (k) => entries[k]), ring);
  t.same(keyRingOf("interrupt.key", (k) => (k.endsWith("valid-until") ? "soon" : entries[k])), { current: "c" }, "an expiry that is no time: not accepted");
  t.equal(keyRingOf("interrupt.key", () => undefined), undefined);
  t.equal(parseValidUntil(" 2026-11-27T00:10:00Z\n"), ring.previous.validUntil, "the newline a Secret file may end with is ignored");
});

t.test("a ring read from files follows them in place", async (t) => {
  const file = join(dir, "owner-tag.key");
  writeFileSync(file, "k1\n");
  const ring = keyRingFromFiles(file, 0);
  t.same(ring(), { current: "k1" });
  const until = Date.now() + 60_000;
  // What the kubelet writes after the operator's rotation: the new key, the old one beside it, and its expiry.
  writeFileSync(file, "k2\n");
  writeFileSync(`${file}.previous`, "k1\n");
  writeFileSync(`${file}.previous.valid-until`, new Date(until).toISOString());
  t.same(ring(), { current: "k2", previous: { key: "k1", validUntil: until } }, "the rotation is read without a restart");
  unlinkSync(file);
  t.same(ring(), { current: "k2", previous: { key: "k1", validUntil: until } }, "a failed read keeps the last good ring");
  writeFileSync(file, "k3\n");
  unlinkSync(`${file}.previous`);
  t.same(ring(), { current: "k3" }, "the previous key removed: no previous key");
  t.throws(() => keyRingFromFiles(join(dir, "absent.key")), /missing or empty/, "a ring must start with a key");
});

t.test("a bearer key is presented as the previous one while its window lasts (every verifier still takes it), then the current one", async (t) => {
  const now = 1_800_000_000_000;
  const ring = rotateRing({ current: "old" }, "new", 60_000, now);
  t.equal(presentedKey(ring, now), "old", "inside the window: the key every engine knows, whether or not it has read the new ring");
  t.equal(presentedKey(ring, now + 60_000), "new", "after it: the current one");
  t.equal(presentedKey(rotateRing({ current: "old" }, "new", 0, now), now), "new", "grace 0: the new key at once");
  let current = { current: "k1" } as ReturnType<ReturnType<typeof fixedKeyRing>>;
  const headers = bearerHeaders(() => current);
  t.same({ ...headers }, { authorization: "Bearer k1" });
  current = { current: "k2" };
  t.same({ ...headers, accept: "x" }, { authorization: "Bearer k2", accept: "x" }, "each spread asks the ring again");
});

t.test("API key files are rings: the previous file's keys are accepted until its window ends, and a rotation is read in place", async (t) => {
  const file = join(dir, "api-keys");
  writeFileSync(file, "alice:alice-key-0123456789\nbob:bob-key-0123456789ab\n");
  const keys = apiKeysFromEnv({ INTERLACE_API_KEYS_FILE: file })!;
  t.equal(keys.get(apiKeyDigest("alice-key-0123456789")), "alice");
  t.equal(keys.size, 2);
  // A rotation: alice gets a new key; the old file stays accepted for 1.5 s.
  const until = Date.now() + 1_500;
  writeFileSync(file, "alice:alice-key-NEW-0123456789\nbob:bob-key-0123456789ab\n");
  writeFileSync(`${file}.previous`, "alice:alice-key-0123456789\nbob:bob-key-0123456789ab\n");
  writeFileSync(`${file}.previous.valid-until`, new Date(until).toISOString());
  const reloaded = apiKeysFromRing(keyRingFromFiles(file, 0));
  t.equal(reloaded.get(apiKeyDigest("alice-key-NEW-0123456789")), "alice", "the new key");
  t.equal(reloaded.get(apiKeyDigest("alice-key-0123456789")), "alice", "the old key, inside the window, as the same principal");
  t.equal(reloaded.size, 3);
  await new Promise((r) => setTimeout(r, until - Date.now() + 20));
  t.equal(reloaded.get(apiKeyDigest("alice-key-0123456789")), undefined, "refused once the window ends");
  t.equal(reloaded.get(apiKeyDigest("bob-key-0123456789ab")), "bob", "unchanged keys stay");
  writeFileSync(file, "alice:short\n");
  t.equal(reloaded.get(apiKeyDigest("alice-key-NEW-0123456789")), "alice", "a file that no longer parses keeps the last good keys");
  t.throws(() => apiKeysFromRing(fixedKeyRing("alice:short")), /at least 16/, "a malformed file at start is an error");
});
