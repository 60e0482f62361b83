/**
 * @module The cluster's trust root, kept in one Secret in the operator's
 * namespace (the chart's `<release>-nats-auth`): the NATS operator, account
 * and system JWTs with the server's `auth.conf` (public), the account seed
 * that signs every component's credentials, the master interrupt key (each
 * namespace gets only its derived key; during a rotation's grace window the
 * previous master and its expiry sit beside it), the master owner-tag key
 * (the router's; endpoint pickers get their namespace's derived key; rotated
 * the same way), and the router's API
 * key towards engines. nats-server mounts only `auth.conf`; nothing else
 * leaves the release namespace.
 *
 * Made at the operator's first start when absent, so the chart works with
 * authentication on out of the box (Helm cannot make nkeys). Two replicas
 * starting together both try; the loser's create gets 409 and it reads the
 * winner's. A Secret made by `hack/nats-keys.ts` (same layout) is used as it
 * is; a missing interrupt or engine key is added to it.
 */
import { randomBytes } from "node:crypto";
import type { V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { accountPublicKey, createTrustRoot, serverAuthConfig, type NatsTrustRoot } from "../../../common/src/security/nats-credentials.js";
import { CredentialKey } from "../../../common/src/security/credential-files.js";
import { keyRingEntries, keyRingOf, rotateRing, type PreviousKey } from "../../../common/src/security/key-ring.js";
import { CoreTypes, type KubeClient } from "../runtime/index.js";

/** Keys of the trust-root Secret besides the shared {@link CredentialKey}s. */
export const TrustKey = {
  AuthConf: "auth.conf",
  AccountSeed: "account.seed",
  OperatorSeed: "operator.seed",
  /** The public half of the root (JWTs and public keys), for tools and tests. */
  Trust: "trust.json",
} as const;

/** What the operator needs from the trust root to mint credentials. */
export interface TrustMaterial {
  accountSeed: string;
  accountPublicKey: string;
  /** Master interrupt key (never written outside the release namespace). */
  interruptKey: string;
  /** The master interrupt key before the last rotation, kept until its grace window ends. */
  previousInterruptKey?: PreviousKey;
  /** Master owner-tag key: the router's own. */
  ownerTagKey: string;
  /** The master owner-tag key before the last rotation, kept until its grace window ends. */
  previousOwnerTagKey?: PreviousKey;
  /** The router's API key towards engines. */
  engineApiKey: string;
  /** The engine API key before the last rotation, kept until its grace window ends. */
  previousEngineApiKey?: PreviousKey;
}

/** Keys of the trust root that the operator makes when missing. */
const GENERATED_KEYS = [CredentialKey.InterruptKey, CredentialKey.OwnerTagKey, CredentialKey.EngineApiKey] as const;

/** A fresh random key (256 bits, hex). */
export function randomKey(): string {
  return randomBytes(32).toString("hex");
}

/** The Secret's data for a new root (strings; base64 is the caller's). */
export function trustRootSecretData(
  root: NatsTrustRoot,
  keys: { interruptKey: string; ownerTagKey: string; engineApiKey: string } = { interruptKey: randomKey(), ownerTagKey: randomKey(), engineApiKey: randomKey() },
): Record<string, string> {
  const { operatorJwt, accountJwt, systemPublicKey, systemJwt } = root;
  return {
    [TrustKey.AuthConf]: `${serverAuthConfig(root)}\n`,
    [TrustKey.AccountSeed]: root.accountSeed,
    [TrustKey.OperatorSeed]: root.operatorSeed,
    [TrustKey.Trust]: JSON.stringify({ operatorJwt, accountPublicKey: root.accountPublicKey, accountJwt, systemPublicKey, systemJwt }),
    [CredentialKey.InterruptKey]: keys.interruptKey,
    [CredentialKey.OwnerTagKey]: keys.ownerTagKey,
    [CredentialKey.EngineApiKey]: keys.engineApiKey,
  };
}

export const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");
export const unb64 = (s: string | undefined): string | undefined => (s === undefined ? undefined : Buffer.from(s, "base64").toString("utf8"));

function materialOf(secret: V1Secret): TrustMaterial | { missing: readonly string[] } {
  const d = secret.data ?? {};
  const accountSeed = unb64(d[TrustKey.AccountSeed])?.trim();
  if (accountSeed === undefined || accountSeed === "") {
    throw new Error(`Secret ${secret.metadata?.namespace}/${secret.metadata?.name} has no "${TrustKey.AccountSeed}": make it with hack/nats-keys.ts, or delete it and let the operator make one`);
  }
  const key = (k: string): string => unb64(d[k])?.trim() ?? "";
  const missing = GENERATED_KEYS.filter((k) => key(k) === "");
  if (missing.length > 0) return { missing };
  // A previous key past its window is dropped here, so it stops reaching the pools' Secrets too.
  const now = Date.now();
  const previousOf = (name: string): PreviousKey | undefined => {
    const p = keyRingOf(name, (k) => unb64(d[k]))?.previous;
    return p !== undefined && now < p.validUntil ? p : undefined;
  };
  const previousInterruptKey = previousOf(CredentialKey.InterruptKey);
  const previousOwnerTagKey = previousOf(CredentialKey.OwnerTagKey);
  const previousEngineApiKey = previousOf(CredentialKey.EngineApiKey);
  return {
    accountSeed,
    accountPublicKey: accountPublicKey(accountSeed),
    interruptKey: key(CredentialKey.InterruptKey),
    ...(previousInterruptKey !== undefined ? { previousInterruptKey } : {}),
    ownerTagKey: key(CredentialKey.OwnerTagKey),
    ...(previousOwnerTagKey !== undefined ? { previousOwnerTagKey } : {}),
    engineApiKey: key(CredentialKey.EngineApiKey),
    ...(previousEngineApiKey !== undefined ? { previousEngineApiKey } : {}),
  };
}

const isConflict = (err: unknown): boolean => (err as { status?: number }).status === 409;

/** Reads the trust-root Secret `namespace/name`, making it (or its missing keys) first when needed. */
export async function ensureTrustRoot(client: KubeClient, namespace: string, name: string, log: Logger): Promise<TrustMaterial> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const secret = await client.get<V1Secret>(CoreTypes.Secret, namespace, name);
    if (secret === null) {
      const data = trustRootSecretData(await createTrustRoot());
      const body: V1Secret = {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name, namespace, labels: { "app.kubernetes.io/part-of": "interlace", "app.kubernetes.io/component": "trust-root" } },
        type: "Opaque",
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
      };
      try {
        await client.create(CoreTypes.Secret, body);
        log.info({ secret: `${namespace}/${name}` }, "made a new NATS trust root, interrupt key and engine API key");
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
      continue;
    }
    const m = materialOf(secret);
    if (!("missing" in m)) return m;
    // A provided Secret without our keys: add them (optimistic concurrency; a lost race rereads).
    const add = Object.fromEntries(m.missing.map((k) => [k, b64(randomKey())]));
    try {
      await client.replace(CoreTypes.Secret, { ...secret, data: { ...secret.data, ...add } });
      log.info({ secret: `${namespace}/${name}`, added: m.missing }, "added keys to the trust-root Secret");
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error(`could not read or make the trust-root Secret ${namespace}/${name} (kept conflicting)`);
}

/** The trust root's keys that rotate with a grace window. */
export type RotatableKey = "interrupt" | "owner-tag" | "engine-api";

export const ROTATABLE_KEYS: Record<RotatableKey, string> = { interrupt: CredentialKey.InterruptKey, "owner-tag": CredentialKey.OwnerTagKey, "engine-api": CredentialKey.EngineApiKey };

/**
 * Rotates a master key (`key.ts` of hack/rotate-key.ts): a fresh one becomes
 * current and the old one `<key>.previous`, accepted until
 * `<key>.previous.valid-until` = now + `graceMs` (a previous key still in
 * its own window is replaced: only one rotation is in grace at a time).
 * `graceMs` 0 revokes the old key at once (a leaked key: interrupts signed
 * with it are dropped as `unknown_key`, owner tags made with it get 403).
 * The running operator reads the trust root again every few seconds
 * (CredentialAuthority.watch); the pools' and the router's Secrets then
 * carry the new ring, and running pods read it in place (no roll), signing
 * with the new key and accepting both until the window ends.
 */
export async function rotateTrustKey(client: KubeClient, namespace: string, name: string, log: Logger, options: { key: RotatableKey; graceMs: number; now?: number }): Promise<void> {
  const entry = ROTATABLE_KEYS[options.key];
  for (let attempt = 0; attempt < 5; attempt++) {
    const secret = await client.get<V1Secret>(CoreTypes.Secret, namespace, name);
    if (secret === null) throw new Error(`no trust-root Secret ${namespace}/${name} to rotate`);
    const current = unb64(secret.data?.[entry])?.trim() ?? "";
    const now = options.now ?? Date.now();
    const ring = rotateRing({ current }, randomKey(), current === "" ? 0 : options.graceMs, now);
    const data: Record<string, string> = { ...secret.data };
    for (const k of Object.keys(keyRingEntries(entry, { current: "", previous: { key: "", validUntil: 0 } }))) delete data[k];
    for (const [k, v] of Object.entries(keyRingEntries(entry, ring))) data[k] = b64(v);
    try {
      await client.replace(CoreTypes.Secret, { ...secret, data });
      log.info({ secret: `${namespace}/${name}`, key: options.key, graceMs: options.graceMs, validUntil: ring.previous !== undefined ? new Date(ring.previous.validUntil).toISOString() : null }, `rotated the master ${options.key} key`);
      return;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error(`could not rotate the ${options.key} key in ${namespace}/${name} (kept conflicting)`);
}
