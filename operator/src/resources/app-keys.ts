/**
 * @module An AgentApp's `spec.auth` → the key identities the routers check:
 * for each key in the Secrets it names, a stable id and the SHA-256 of the
 * key. The keys themselves never leave the Secrets (routers compare digests
 * of what clients send). A pure function of the app and the Secrets as read;
 * a missing Secret, a missing key or a key too short to be one is the
 * Degraded reason the reconciler reports.
 */
import type { V1Secret } from "@kubernetes/client-node";
import { appKeyId, type AppAuth, type AppKeyIdentity } from "../../../common/src/protocol/index.js";
import { apiKeyDigest } from "../../../common/src/security/http-auth.js";
import { Reason, type AgentApp } from "../api/index.js";

/** As short a key as the router's key file accepts (http-auth.ts). */
export const MIN_API_KEY_LENGTH = 16;

export type AppKeysResult = { ok: true; auth: AppAuth } | { ok: false; reason: string; message: string };

/**
 * The identities of the keys `app.spec.auth` names, given its Secrets by
 * name (`null`: not found). Values are trimmed: a key written with a
 * trailing newline (`kubectl create secret --from-file`) is the key without it.
 */
export function resolveAppKeys(app: AgentApp, secrets: ReadonlyMap<string, V1Secret | null>): AppKeysResult {
  const namespace = app.metadata.namespace ?? "default";
  const keys: AppKeyIdentity[] = [];
  for (const [i, ref] of (app.spec.auth?.apiKeySecrets ?? []).entries()) {
    const field = `spec.auth.apiKeySecrets[${i}]`;
    const secret = secrets.get(ref.name);
    if (secret === null || secret === undefined) return { ok: false, reason: Reason.ApiKeySecretNotFound, message: `${field}: Secret ${namespace}/${ref.name} not found` };
    const data = secret.data ?? {};
    const entries = ref.key !== undefined ? [[ref.key, data[ref.key]] as const] : Object.entries(data);
    if (entries.length === 0) return { ok: false, reason: Reason.ApiKeyNotFound, message: `${field}: Secret ${namespace}/${ref.name} holds no key` };
    for (const [name, encoded] of entries) {
      if (encoded === undefined) return { ok: false, reason: Reason.ApiKeyNotFound, message: `${field}: Secret ${namespace}/${ref.name} has no key "${name}"` };
      const key = Buffer.from(encoded, "base64").toString("utf8").trim();
      if (key.length < MIN_API_KEY_LENGTH || /\s/.test(key)) {
        return { ok: false, reason: Reason.ApiKeyInvalid, message: `${field}: key "${name}" of Secret ${namespace}/${ref.name} must be at least ${MIN_API_KEY_LENGTH} characters with no whitespace` };
      }
      const id = appKeyId(namespace, ref.name, name);
      if (!keys.some((k) => k.id === id)) keys.push({ id, sha256: apiKeyDigest(key) });
    }
  }
  return { ok: true, auth: { keys } };
}
