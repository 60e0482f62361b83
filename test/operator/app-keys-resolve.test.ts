/**
 * The pure half of AgentApp `spec.auth` (operator/src/resources/app-keys.ts):
 * the Secrets' keys become ids and SHA-256 digests (never the keys), values
 * are trimmed, a named key narrows the Secret to it; a missing Secret, a
 * missing or empty key set and a key too short are the Degraded reasons;
 * the app's ConfigMap shows the ids only; a value that changes keeps the old
 * digest for the grace window (the operator's, or the Secret's annotation;
 * 0 keeps none), and drops it once the window has ended.
 */
import t from "tap";
import type { V1Secret } from "@kubernetes/client-node";
import { apiKeyDigest } from "../../common/src/security/http-auth.js";
import { Reason, type AgentApp } from "../../operator/src/api/index.js";
import { APP_CONFIG_KEY, buildAppConfigMap, KEY_GRACE_ANNOTATION, resolveAppKeys } from "../../operator/src/resources/index.js";
import { appConfig } from "../router/fixtures.js";

const KEY = "alice-key-0123456789abcdef";
const app = (auth: AgentApp["spec"]["auth"]): AgentApp => ({
  apiVersion: "interlace.dev/v1alpha1",
  kind: "AgentApp",
  metadata: { name: "app", namespace: "team-a", uid: "uid-app" },
  spec: { enginePool: { name: "pool" }, ...(auth !== undefined ? { auth } : {}) },
});
const secret = (data: Record<string, string>): V1Secret => ({ data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])) });

t.test("keys become ids and digests", async (t) => {
  const secrets = new Map([
    ["keys", secret({ alice: `${KEY}\n`, carol: "carol-key-0123456789abcdef" })],
    ["shared", secret({ "team-a": "team-a-key-0123456789abcdef", "team-b": "x" })],
  ]);
  const got = resolveAppKeys(app({ apiKeySecrets: [{ name: "keys" }, { name: "shared", key: "team-a" }] }), secrets);
  t.same(got, {
    ok: true,
    auth: {
      keys: [
        { id: "secret:team-a/keys/alice", sha256: apiKeyDigest(KEY) },
        { id: "secret:team-a/keys/carol", sha256: apiKeyDigest("carol-key-0123456789abcdef") },
        { id: "secret:team-a/shared/team-a", sha256: apiKeyDigest("team-a-key-0123456789abcdef") },
      ],
    },
  }, "the trailing newline is not part of the key; team-b's entry of the shared Secret is not read");
  t.notMatch(JSON.stringify(got), KEY, "no key in clear");
});

t.test("what cannot be resolved is a reason that names the field", async (t) => {
  const cases: [string, AgentApp, Map<string, V1Secret | null>, string, RegExp][] = [
    ["no Secret", app({ apiKeySecrets: [{ name: "keys" }] }), new Map([["keys", null]]), Reason.ApiKeySecretNotFound, /spec\.auth\.apiKeySecrets\[0\]: Secret team-a\/keys not found/],
    ["no such key", app({ apiKeySecrets: [{ name: "keys", key: "dave" }] }), new Map([["keys", secret({ alice: KEY })]]), Reason.ApiKeyNotFound, /has no key "dave"/],
    ["an empty Secret", app({ apiKeySecrets: [{ name: "keys" }] }), new Map([["keys", secret({})]]), Reason.ApiKeyNotFound, /holds no key/],
    ["a short key", app({ apiKeySecrets: [{ name: "keys" }] }), new Map([["keys", secret({ alice: "short" })]]), Reason.ApiKeyInvalid, /at least 16 characters/],
    ["a key with inner whitespace", app({ apiKeySecrets: [{ name: "keys" }] }), new Map([["keys", secret({ alice: `${KEY} ${KEY}` })]]), Reason.ApiKeyInvalid, /no whitespace/],
  ];
  for (const [what, a, secrets, reason, message] of cases) t.match(resolveAppKeys(a, secrets), { ok: false, reason, message }, what);
});

t.test("the app's ConfigMap shows key ids, not digests", async (t) => {
  const config = appConfig("app", { namespace: "team-a", auth: { keys: [{ id: "secret:team-a/keys/alice", sha256: apiKeyDigest(KEY) }] } });
  const rendered = buildAppConfigMap(app({ apiKeySecrets: [{ name: "keys" }] }), config).data?.[APP_CONFIG_KEY] ?? "";
  t.same((JSON.parse(rendered) as { auth: unknown }).auth, { keys: [{ id: "secret:team-a/keys/alice" }] });
  t.notMatch(rendered, apiKeyDigest(KEY));
});

t.test("a key whose value changes keeps its old digest for the grace window, as the same id", async (t) => {
  const NEXT = "alice-key-rotated-0123456789";
  const spec = app({ apiKeySecrets: [{ name: "keys" }] });
  const now = 1_800_000_000_000;
  const first = resolveAppKeys(spec, new Map([["keys", secret({ alice: KEY })]]), { graceMs: 600_000, now });
  if (!first.ok) throw new Error("resolves");
  t.same(first.auth.keys, [{ id: "secret:team-a/keys/alice", sha256: apiKeyDigest(KEY) }], "nothing before: no previous value");
  const rotatedSecret = new Map([["keys", secret({ alice: NEXT })]]);
  const second = resolveAppKeys(spec, rotatedSecret, { before: first.auth, graceMs: 600_000, now });
  if (!second.ok) throw new Error("resolves");
  t.same(second.auth.keys, [{ id: "secret:team-a/keys/alice", sha256: apiKeyDigest(NEXT), previous: { sha256: apiKeyDigest(KEY), validUntil: now + 600_000 } }], "the old digest, with when it ends");
  const later = resolveAppKeys(spec, rotatedSecret, { before: second.auth, graceMs: 600_000, now: now + 300_000 });
  t.same(later, second, "a later pass keeps the same window (it does not restart)");
  const ended = resolveAppKeys(spec, rotatedSecret, { before: second.auth, graceMs: 600_000, now: now + 600_000 });
  t.same(ended, { ok: true, auth: { keys: [{ id: "secret:team-a/keys/alice", sha256: apiKeyDigest(NEXT) }] } }, "dropped once the window has ended");
  t.same(resolveAppKeys(spec, rotatedSecret, { before: first.auth, graceMs: 0, now }), ended, "grace 0: the old value is refused at once");
  const annotated = (v: string): Map<string, V1Secret> => new Map([["keys", { ...secret({ alice: NEXT }), metadata: { annotations: { [KEY_GRACE_ANNOTATION]: v } } }]]);
  t.same(resolveAppKeys(spec, annotated("0"), { before: second.auth, graceMs: 600_000, now }), ended, "the Secret's annotation at 0 revokes, even a window already running");
  const short = resolveAppKeys(spec, annotated("30"), { before: first.auth, graceMs: 600_000, now });
  t.match(short, { ok: true, auth: { keys: [{ previous: { validUntil: now + 30_000 } }] } }, "the Secret's annotation sets its keys' window");
  t.same(resolveAppKeys(spec, annotated("ten minutes"), { before: first.auth, graceMs: 600_000, now }), ended, "an annotation that is no number of seconds: 0 (fail closed)");
});
