/**
 * @module The cluster's trust root, kept in one Secret in the operator's
 * namespace (the chart's `<release>-nats-auth`): the NATS operator, account
 * and system JWTs with the server's `auth.conf` (public), the account seed
 * that signs every component's credentials, the interrupt key, and the
 * router's API key towards engines. nats-server mounts only `auth.conf`.
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
  interruptKey: string;
  engineApiKey: string;
}

/** A fresh random key (256 bits, hex). */
export function randomKey(): string {
  return randomBytes(32).toString("hex");
}

/** The Secret's data for a new root (strings; base64 is the caller's). */
export function trustRootSecretData(root: NatsTrustRoot, keys: { interruptKey: string; engineApiKey: string } = { interruptKey: randomKey(), engineApiKey: randomKey() }): Record<string, string> {
  const { operatorJwt, accountJwt, systemPublicKey, systemJwt } = root;
  return {
    [TrustKey.AuthConf]: `${serverAuthConfig(root)}\n`,
    [TrustKey.AccountSeed]: root.accountSeed,
    [TrustKey.OperatorSeed]: root.operatorSeed,
    [TrustKey.Trust]: JSON.stringify({ operatorJwt, accountPublicKey: root.accountPublicKey, accountJwt, systemPublicKey, systemJwt }),
    [CredentialKey.InterruptKey]: keys.interruptKey,
    [CredentialKey.EngineApiKey]: keys.engineApiKey,
  };
}

export const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");
export const unb64 = (s: string | undefined): string | undefined => (s === undefined ? undefined : Buffer.from(s, "base64").toString("utf8"));

function materialOf(secret: V1Secret): TrustMaterial | { missing: string[] } {
  const d = secret.data ?? {};
  const accountSeed = unb64(d[TrustKey.AccountSeed])?.trim();
  if (accountSeed === undefined || accountSeed === "") {
    throw new Error(`Secret ${secret.metadata?.namespace}/${secret.metadata?.name} has no "${TrustKey.AccountSeed}": make it with hack/nats-keys.ts, or delete it and let the operator make one`);
  }
  const interruptKey = unb64(d[CredentialKey.InterruptKey])?.trim();
  const engineApiKey = unb64(d[CredentialKey.EngineApiKey])?.trim();
  const missing = [...(interruptKey ? [] : [CredentialKey.InterruptKey]), ...(engineApiKey ? [] : [CredentialKey.EngineApiKey])];
  if (missing.length > 0) return { missing };
  return { accountSeed, accountPublicKey: accountPublicKey(accountSeed), interruptKey: interruptKey!, engineApiKey: engineApiKey! };
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
