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
import { acceptedKeys, keyRingEntries, keyRingFromFiles, keyRingOf, parseValidUntil, rotateRing } from "../../common/src/security/key-ring.js";

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
