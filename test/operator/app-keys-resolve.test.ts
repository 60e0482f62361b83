/**
 * The pure half of AgentApp `spec.auth` (operator/src/resources/app-keys.ts):
 * the Secrets' keys become ids and SHA-256 digests (never the keys), values
 * are trimmed, a named key narrows the Secret to it; a missing Secret, a
 * missing or empty key set and a key too short are the Degraded reasons;
 * the app's ConfigMap shows the ids only.
 */
import t from "tap";
import type { V1Secret } from "@kubernetes/client-node";
import { apiKeyDigest } from "../../common/src/security/http-auth.js";
import { Reason, type AgentApp } from "../../operator/src/api/index.js";
import { APP_CONFIG_KEY, buildAppConfigMap, resolveAppKeys } from "../../operator/src/resources/index.js";
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
