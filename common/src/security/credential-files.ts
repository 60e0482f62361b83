/**
 * @module The one layout of an Interlace pod's credentials: the keys of the
 * Secret the operator writes for each pool (and for the router), where pods
 * mount it, the environment variables that point each process at its files,
 * and how a process loads them. The operator's builders, the chart and the
 * processes all use it.
 *
 * Keys travel as files only (a mounted Secret), never as environment values:
 * the environment is visible to every process of the pod, in `kubectl
 * describe` and in crash dumps. Fail closed: with `INTERLACE_AUTH=required`
 * (set by the chart and the operator whenever authentication is on), a
 * process refuses to start when a credential it needs is missing, and names
 * the file it expected; without it (a laptop) a missing credential turns its
 * check off.
 */
import { existsSync, readFileSync } from "node:fs";
import { keyRingFromFiles, type KeyRingSource } from "./key-ring.js";

/** Where a pod's credentials Secret is mounted (read-only). */
export const CREDENTIALS_DIR = "/var/run/interlace/credentials";

/** Keys of a credentials Secret. */
export const CredentialKey = {
  /** NATS user JWT + seed for the pod's identity (see nats-permissions.ts). */
  NatsCreds: "nats.creds",
  /** The CA that signed the NATS servers' certificates. */
  Ca: "ca.crt",
  /** HMAC key of signed user/agent interrupts: the pod's namespace's key (engines only; see interrupt-signature.ts). */
  InterruptKey: "interrupt.key",
  /** The namespace's previous interrupt key, during a rotation's grace window (key-ring.ts)... */
  InterruptKeyPrevious: "interrupt.key.previous",
  /** ...and when that window ends (ISO 8601): after it the previous key is refused. */
  InterruptKeyPreviousValidUntil: "interrupt.key.previous.valid-until",
  /** HMAC key of session-owner tags (the router's own, or an endpoint picker's namespace key; never an engine's). */
  OwnerTagKey: "owner-tag.key",
  /** The previous owner-tag key and the end of its grace window, as for the interrupt key. */
  OwnerTagKeyPrevious: "owner-tag.key.previous",
  OwnerTagKeyPreviousValidUntil: "owner-tag.key.previous.valid-until",
  /** `<principal>:<key>` lines an engine accepts as bearer tokens (the router's key). */
  ApiKeys: "api-keys",
  /** The router's bearer token towards engines. */
  EngineApiKey: "engine-api.key",
} as const;

/** Environment variables that name each credential's file. */
export const CredentialEnv = {
  NatsCreds: "INTERLACE_NATS_CREDS",
  NatsCa: "INTERLACE_NATS_CA",
  InterruptKey: "INTERLACE_INTERRUPT_KEY_FILE",
  OwnerTagKey: "INTERLACE_OWNER_TAG_KEY_FILE",
  ApiKeysFile: "INTERLACE_API_KEYS_FILE",
  EngineApiKey: "INTERLACE_ENGINE_API_KEY_FILE",
} as const;

/** `INTERLACE_AUTH=required`: every credential a process needs must be there (see the module note). */
export const AUTH_ENV = "INTERLACE_AUTH";

export type CredentialName = keyof typeof CredentialEnv;

const DEFAULT_FILE: Record<CredentialName, string> = {
  NatsCreds: CredentialKey.NatsCreds,
  NatsCa: CredentialKey.Ca,
  InterruptKey: CredentialKey.InterruptKey,
  OwnerTagKey: CredentialKey.OwnerTagKey,
  ApiKeysFile: CredentialKey.ApiKeys,
  EngineApiKey: CredentialKey.EngineApiKey,
};

/** A required credential file that is not there: the process must not start. */
export class MissingCredentialError extends Error {
  readonly code = "missing_credential";
  override readonly name = "MissingCredentialError";
  constructor(
    readonly file: string,
    readonly variable: string,
  ) {
    super(`authentication is required (${AUTH_ENV}=required) but the credential file ${file} (${variable}) is missing: refusing to start without it`);
  }
}

/** Whether this process must have all its credentials. */
export function authRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env[AUTH_ENV];
  if (v === undefined || v === "" || v === "optional") return false;
  if (v === "required") return true;
  throw new Error(`${AUTH_ENV} must be "required" or "optional", got "${v}"`);
}

/**
 * The file of credential `name`: its variable's value, else (auth required)
 * the default path in {@link CREDENTIALS_DIR}; undefined when not configured.
 * With auth required, a file that does not exist throws {@link MissingCredentialError}.
 */
export function credentialFile(name: CredentialName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const variable = CredentialEnv[name];
  const given = env[variable];
  const required = authRequired(env);
  const file = given !== undefined && given !== "" ? given : required ? `${CREDENTIALS_DIR}/${DEFAULT_FILE[name]}` : undefined;
  if (file !== undefined && required && !existsSync(file)) throw new MissingCredentialError(file, variable);
  return file;
}

/** A key file's contents (trimmed); undefined when not configured. An empty file is an error, not "no key". */
export function readKeyFile(name: CredentialName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const file = credentialFile(name, env);
  if (file === undefined) return undefined;
  const key = readFileSync(file, "utf8").trim();
  if (key === "") throw new Error(`the credential file ${file} (${CredentialEnv[name]}) is empty`);
  return key;
}

/**
 * A key with its rotation's grace window (key-ring.ts): the current key in
 * the credential's file, the previous one and its expiry beside it
 * (`<file>.previous`, `<file>.previous.valid-until`), read again every few
 * seconds so a rotation reaches the running process. Undefined when not configured.
 */
export function readKeyRing(name: "InterruptKey" | "OwnerTagKey" | "EngineApiKey", env: NodeJS.ProcessEnv = process.env): KeyRingSource | undefined {
  if (readKeyFile(name, env) === undefined) return undefined;
  return keyRingFromFiles(credentialFile(name, env)!);
}

/** Checks that every credential in `names` is present when auth is required (start-up, before anything connects). */
export function requireCredentials(names: readonly CredentialName[], env: NodeJS.ProcessEnv = process.env): void {
  for (const n of names) credentialFile(n, env);
}
