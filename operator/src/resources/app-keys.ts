/**
 * @module An AgentApp's `spec.auth` → the key identities the routers check:
 * for each key in the Secrets it names, a stable id and the SHA-256 of the
 * key. The keys themselves never leave the Secrets (routers compare digests
 * of what clients send). A pure function of the app and the Secrets as read;
 * a missing Secret, a missing key or a key too short to be one is the
 * Degraded reason the reconciler reports.
 *
 * Rotation: given what was published before, a key whose value changed keeps
 * its old digest as `previous`, accepted until now + the grace window (same
 * id, so it still owns what it made); a previous digest whose window has
 * ended is dropped. Grace 0: the old value is refused at once. The window is
 * the operator's (`--key-grace-ms`), or the Secret's own
 * `interlace.dev/key-grace-seconds` annotation (a leaked key: write the new
 * value with the annotation at "0").
 */
import type { V1Secret } from "@kubernetes/client-node";
import { appKeyId, type AppAuth, type AppKeyIdentity } from "../../../common/src/protocol/index.js";
import { apiKeyDigest } from "../../../common/src/security/http-auth.js";
import { Reason, type AgentApp } from "../api/index.js";

/** A key Secret's annotation that sets its keys' grace window (seconds), over the operator's default. */
export const KEY_GRACE_ANNOTATION = "interlace.dev/key-grace-seconds";

/** The grace window of `secret`'s keys: its annotation (not a whole number of seconds: 0, fail closed), else `fallbackMs`. */
export function keyGraceMs(secret: V1Secret, fallbackMs: number): number {
  const v = secret.metadata?.annotations?.[KEY_GRACE_ANNOTATION];
  if (v === undefined) return fallbackMs;
  return /^\s*\d{1,9}\s*$/.test(v) ? Number(v) * 1000 : 0;
}

/** As short a key as the router's key file accepts (http-auth.ts). */
export const MIN_API_KEY_LENGTH = 16;

export type AppKeysResult = { ok: true; auth: AppAuth } | { ok: false; reason: string; message: string };

/**
 * The identities of the keys `app.spec.auth` names, given its Secrets by
 * name (`null`: not found). Values are trimmed: a key written with a
 * trailing newline (`kubectl create secret --from-file`) is the key without it.
 */
export function resolveAppKeys(
  app: AgentApp,
  secrets: ReadonlyMap<string, V1Secret | null>,
  rotation: { before?: AppAuth; graceMs: number; now: number } = { graceMs: 0, now: 0 },
): AppKeysResult {
  const namespace = app.metadata.namespace ?? "default";
  const keys: AppKeyIdentity[] = [];
  for (const [i, ref] of (app.spec.auth?.apiKeySecrets ?? []).entries()) {
    const field = `spec.auth.apiKeySecrets[${i}]`;
    const secret = secrets.get(ref.name);
    if (secret === null || secret === undefined) return { ok: false, reason: Reason.ApiKeySecretNotFound, message: `${field}: Secret ${namespace}/${ref.name} not found` };
    const data = secret.data ?? {};
    const graceMs = keyGraceMs(secret, rotation.graceMs);
    const entries = ref.key !== undefined ? [[ref.key, data[ref.key]] as const] : Object.entries(data);
    if (entries.length === 0) return { ok: false, reason: Reason.ApiKeyNotFound, message: `${field}: Secret ${namespace}/${ref.name} holds no key` };
    for (const [name, encoded] of entries) {
      if (encoded === undefined) return { ok: false, reason: Reason.ApiKeyNotFound, message: `${field}: Secret ${namespace}/${ref.name} has no key "${name}"` };
      const key = Buffer.from(encoded, "base64").toString("utf8").trim();
      if (key.length < MIN_API_KEY_LENGTH || /\s/.test(key)) {
        return { ok: false, reason: Reason.ApiKeyInvalid, message: `${field}: key "${name}" of Secret ${namespace}/${ref.name} must be at least ${MIN_API_KEY_LENGTH} characters with no whitespace` };
      }
      const id = appKeyId(namespace, ref.name, name);
      if (!keys.some((k) => k.id === id)) keys.push(withPrevious({ id, sha256: apiKeyDigest(key) }, rotation.before?.keys.find((k) => k.id === id), { graceMs, now: rotation.now }));
    }
  }
  return { ok: true, auth: { keys } };
}

/** `key` with the value it replaced (or the one still in grace from an earlier change), while its window lasts. */
function withPrevious(key: AppKeyIdentity, before: AppKeyIdentity | undefined, rotation: { graceMs: number; now: number }): AppKeyIdentity {
  // Grace 0 revokes every earlier value at once, even one still in an earlier window.
  if (before === undefined || rotation.graceMs === 0) return key;
  const previous =
    before.sha256 !== key.sha256 ? (rotation.graceMs > 0 ? { sha256: before.sha256, validUntil: rotation.now + rotation.graceMs } : undefined) : before.previous;
  return previous !== undefined && previous.sha256 !== key.sha256 && rotation.now < previous.validUntil ? { ...key, previous } : key;
}
