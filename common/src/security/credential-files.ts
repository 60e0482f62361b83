/**
 * @module The one layout of an Interlace pod's credentials: the keys of the
 * Secret the operator writes for each pool (and for the router), where pods
 * mount it, and the environment variables that point each process at its
 * files. The operator's builders, the chart and the processes all use it.
 */

/** Where a pod's credentials Secret is mounted (read-only). */
export const CREDENTIALS_DIR = "/var/run/interlace/credentials";

/** Keys of a credentials Secret. */
export const CredentialKey = {
  /** NATS user JWT + seed for the pod's identity (see nats-permissions.ts). */
  NatsCreds: "nats.creds",
  /** The CA that signed the NATS servers' certificates. */
  Ca: "ca.crt",
  /** HMAC key of signed user/agent interrupts (engines and router only). */
  InterruptKey: "interrupt.key",
  /** `<principal>:<key>` lines an engine accepts as bearer tokens (the router's key). */
  ApiKeys: "api-keys",
  /** The router's bearer token towards engines. */
  EngineApiKey: "engine-api.key",
} as const;

/** Environment variables the processes read their credentials from. */
export const CredentialEnv = {
  NatsCreds: "INTERLACE_NATS_CREDS",
  NatsCa: "INTERLACE_NATS_CA",
  InterruptKey: "INTERLACE_INTERRUPT_KEY",
  ApiKeysFile: "INTERLACE_API_KEYS_FILE",
  EngineApiKey: "INTERLACE_ENGINE_API_KEY",
} as const;
