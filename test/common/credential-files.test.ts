/**
 * Credential files (common/src/security/credential-files.ts): with
 * `INTERLACE_AUTH=required` a missing file is an error that names the file
 * and its variable (defaulting to the credentials mount); without it a
 * missing credential means "off"; an empty key file is an error, never "no
 * key"; the interrupt key ring picks up the previous key beside the current
 * one with its expiry (none: not accepted); and a key signed with either
 * verifies while the window lasts, one named by no key does not.
 */
import t from "tap";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authRequired, credentialFile, MissingCredentialError, readKeyFile, readKeyRing, requireCredentials } from "../../common/src/security/credential-files.js";
import { InterruptVerifier, signInterrupt } from "../../common/src/security/interrupt-signature.js";
import { namespaceKey } from "../../common/src/security/derived-keys.js";

const dir = mkdtempSync(join(tmpdir(), "interlace-credfiles-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test("auth required: a missing file refuses, naming it; optional: off", async (t) => {
  t.equal(authRequired({}), false);
  t.equal(authRequired({ INTERLACE_AUTH: "required" }), true);
  t.throws(() => authRequired({ INTERLACE_AUTH: "yes" }), /must be "required" or "optional"/);
  t.equal(credentialFile("OwnerTagKey", {}), undefined, "not configured, not required: off");
  t.throws(() => credentialFile("OwnerTagKey", { INTERLACE_AUTH: "required" }), {
    name: "MissingCredentialError",
    message: /credential file \/var\/run\/interlace\/credentials\/owner-tag\.key \(INTERLACE_OWNER_TAG_KEY_FILE\) is missing/,
  });
  const given = join(dir, "nope.creds");
  t.throws(() => requireCredentials(["NatsCreds"], { INTERLACE_AUTH: "required", INTERLACE_NATS_CREDS: given }), new MissingCredentialError(given, "INTERLACE_NATS_CREDS"));
  writeFileSync(given, "x");
  t.doesNotThrow(() => requireCredentials(["NatsCreds"], { INTERLACE_AUTH: "required", INTERLACE_NATS_CREDS: given }));
  const empty = join(dir, "empty.key");
  writeFileSync(empty, "\n");
  t.throws(() => readKeyFile("EngineApiKey", { INTERLACE_ENGINE_API_KEY_FILE: empty }), /is empty/, "an empty key file is an error, not an open door");
});

t.test("the interrupt key ring: current signs, previous still verifies, others do not", async (t) => {
  const current = namespaceKey("m".repeat(64), "interrupt", "team-a");
  const previous = namespaceKey("p".repeat(64), "interrupt", "team-a");
  t.not(current, namespaceKey("m".repeat(64), "interrupt", "team-b"), "namespaces get different keys");
  t.not(current, namespaceKey("m".repeat(64), "owner-tag", "team-a"), "purposes get different keys");
  const file = join(dir, "interrupt.key");
  writeFileSync(file, `${current}\n`);
  t.same(readKeyRing("InterruptKey", { INTERLACE_INTERRUPT_KEY_FILE: file })!(), { current });
  writeFileSync(`${file}.previous`, previous);
  t.same(readKeyRing("InterruptKey", { INTERLACE_INTERRUPT_KEY_FILE: file })!(), { current }, "a previous key without its expiry is not accepted (fail closed)");
  const until = Date.now() + 60_000;
  writeFileSync(`${file}.previous.valid-until`, `${new Date(until).toISOString()}\n`);
  const source = readKeyRing("InterruptKey", { INTERLACE_INTERRUPT_KEY_FILE: file })!;
  t.same(source(), { current, previous: { key: previous, validUntil: until } });
  t.equal(readKeyRing("InterruptKey", {}), undefined, "not configured: no ring");
  const verifier = new InterruptVerifier(source);
  const body = new TextEncoder().encode("{}");
  t.same(verifier.check("s", body, signInterrupt(current, "s", body)), { ok: true });
  t.same(verifier.check("s", body, signInterrupt(previous, "s", body)), { ok: true }, "the previous key during the grace window");
  t.same(verifier.check("s", body, signInterrupt(namespaceKey("m".repeat(64), "interrupt", "team-b"), "s", body)), { ok: false, reason: "unknown_key" }, "another namespace's key");
  t.same(verifier.check("s", body, `${Date.now()}.${"0".repeat(64)}`), { ok: false, reason: "bad_signature" }, "the old header format");
  const late = until + 1;
  t.same(verifier.check("s", body, signInterrupt(previous, "s", body, late), late), { ok: false, reason: "unknown_key" }, "the previous key after its window");
  t.same(verifier.check("s", body, signInterrupt(current, "s", body, late), late), { ok: true }, "the current one still");
});
