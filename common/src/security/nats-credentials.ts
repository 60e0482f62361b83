/**
 * @module NATS decentralized authentication (JWT + nkeys) for Interlace:
 *
 * - a *trust root*: a NATS operator key, the `INTERLACE` account (JetStream
 *   enabled) and the `SYS` system account, as signed JWTs the server loads
 *   from its config (`resolver: MEMORY`);
 * - *user credentials* (`.creds` files) minted per identity with the account
 *   key and exactly the permissions of {@link natsPermissions}. Minting needs
 *   no server change or reload: the server trusts anything the account key
 *   signs. Rotating a component's credentials = minting new ones (old ones
 *   expire, or are revoked in the account JWT); rotating the account key =
 *   a new trust root (see README "Security").
 *
 * The seeds are secrets (a Kubernetes Secret in the chart, a 0600 file in the
 * harness); the JWTs are not.
 */
import { createAccount, createOperator, createUser, encodeAccount, encodeOperator, encodeUser, fmtCreds, fromSeed } from "@nats-io/jwt";
import { identityName, natsPermissions, type NatsIdentity } from "./nats-permissions.js";

export interface NatsTrustRoot {
  operatorJwt: string;
  /** The operator's seed: only needed to re-sign the accounts (e.g. to add revocations). */
  operatorSeed: string;
  accountPublicKey: string;
  accountJwt: string;
  /** Signs user credentials: the one secret the credential minter needs. */
  accountSeed: string;
  systemPublicKey: string;
  systemJwt: string;
}

const text = (b: Uint8Array): string => new TextDecoder().decode(b);

/** A fresh trust root (operator, `INTERLACE` account with unlimited JetStream, `SYS` account). */
export async function createTrustRoot(): Promise<NatsTrustRoot> {
  const okp = createOperator();
  const akp = createAccount();
  const skp = createAccount();
  const operatorJwt = await encodeOperator("interlace", okp, { system_account: skp.getPublicKey() });
  const accountJwt = await encodeAccount(
    "INTERLACE",
    akp,
    {
      limits: {
        subs: -1,
        conn: -1,
        leaf: -1,
        imports: -1,
        exports: -1,
        data: -1,
        payload: -1,
        wildcards: true,
        // JetStream on (unlimited); -1 disables nothing: it means "no limit".
        mem_storage: -1,
        disk_storage: -1,
        streams: -1,
        consumer: -1,
      },
    },
    { signer: okp },
  );
  const systemJwt = await encodeAccount("SYS", skp, {}, { signer: okp });
  return {
    operatorJwt,
    operatorSeed: text(okp.getSeed()),
    accountPublicKey: akp.getPublicKey(),
    accountJwt,
    accountSeed: text(akp.getSeed()),
    systemPublicKey: skp.getPublicKey(),
    systemJwt,
  };
}

/** The nats.conf lines that make a server trust `root` (JWTs are public; no seed goes into the config). */
export function serverAuthConfig(root: Pick<NatsTrustRoot, "operatorJwt" | "accountPublicKey" | "accountJwt" | "systemPublicKey" | "systemJwt">): string {
  return [
    `operator: ${root.operatorJwt}`,
    `system_account: ${root.systemPublicKey}`,
    "resolver: MEMORY",
    // A client's CONNECT line carries its user JWT, and a JWT carries its permissions: the router's
    // (every bucket it reads and writes, every pool's KV events) outgrows NATS's 4 KiB default.
    "max_control_line: 16384",
    "resolver_preload: {",
    `  ${root.accountPublicKey}: ${root.accountJwt}`,
    `  ${root.systemPublicKey}: ${root.systemJwt}`,
    "}",
  ].join("\n");
}

export interface MintOptions {
  /** Seconds until the credentials expire (default: never; rotate by minting new ones and revoking). */
  expiresInSeconds?: number;
}

/** Mints a `.creds` file (user JWT + its seed) for `id`, signed by the account seed. */
export async function mintUserCreds(accountSeed: string, id: NatsIdentity, options: MintOptions = {}): Promise<string> {
  const akp = fromSeed(new TextEncoder().encode(accountSeed));
  const ukp = createUser();
  const perms = natsPermissions(id);
  const opts: { exp?: number } = {};
  if (options.expiresInSeconds !== undefined) opts.exp = Math.floor(Date.now() / 1000) + options.expiresInSeconds;
  const jwt = await encodeUser(
    identityName(id),
    ukp,
    akp,
    { pub: { allow: perms.publish }, sub: { allow: perms.subscribe }, tags: [`interlace-${id.kind}`] },
    opts,
  );
  return text(fmtCreds(jwt, ukp));
}

/** Mints credentials for a user with no permissions at all (tests: "authenticated but not allowed"). */
export async function mintPowerlessCreds(accountSeed: string, name = "nobody"): Promise<string> {
  const akp = fromSeed(new TextEncoder().encode(accountSeed));
  const ukp = createUser();
  const jwt = await encodeUser(name, ukp, akp, { pub: { deny: [">"] }, sub: { deny: [">"] } });
  return text(fmtCreds(jwt, ukp));
}

/** The public key of an account seed (what identifies the account that signed a credential). */
export function accountPublicKey(accountSeed: string): string {
  return fromSeed(new TextEncoder().encode(accountSeed)).getPublicKey();
}
