/**
 * @module A pool's credentials Secret and how its pods use it: the Secret
 * (NATS `.creds` of the pool's identity, the NATS CA, and for engines the
 * interrupt key and the API keys they accept), its volume and mount, and the
 * environment that points the process at the files (credential-files.ts).
 * Pure: the controller mints the contents and passes them in.
 */
import type { V1EnvVar, V1Secret, V1Volume, V1VolumeMount } from "@kubernetes/client-node";
import { AUTH_ENV, CREDENTIALS_DIR, CredentialEnv, CredentialKey } from "../../../common/src/security/credential-files.js";
import { childMeta, type Owner } from "./common.js";

/** What a pod is given; absent on a laptop install without auth or TLS. */
export interface PodCredentials {
  secretName: string;
  /**
   * Changes whenever what pods read only at start changes (not the key rings
   * they read again in place): a pod-template annotation, so pods roll onto new credentials.
   */
  fingerprint: string;
  /** Which {@link CredentialKey}s the Secret holds. */
  keys: readonly string[];
}

/** The annotation that carries {@link PodCredentials.fingerprint} on the Secret and the pod template. */
export const CREDENTIALS_ANNOTATION = "interlace.dev/credentials";
const VOLUME = "credentials";

/** `<child>-credentials`. */
export function credentialsSecretName(childName: string): string {
  return `${childName}-credentials`;
}

/** The Secret, owned by the pool (garbage-collected with it). */
export function buildCredentialsSecret(owner: Owner, name: string, component: string, data: Record<string, string>, fingerprint: string): V1Secret {
  const meta = childMeta(owner, name, component);
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { ...meta, annotations: { [CREDENTIALS_ANNOTATION]: fingerprint } },
    type: "Opaque",
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "utf8").toString("base64")])),
  };
}

/** The volume, mount, environment and pod annotation that hand `creds` to a container. */
export function credentialsWiring(creds: PodCredentials | undefined): { volumes: V1Volume[]; mounts: V1VolumeMount[]; env: V1EnvVar[]; annotations: Record<string, string> } {
  if (creds === undefined) return { volumes: [], mounts: [], env: [], annotations: {} };
  const has = (k: string): boolean => creds.keys.includes(k);
  const file = (k: string): string => `${CREDENTIALS_DIR}/${k}`;
  const env: V1EnvVar[] = [];
  // Fail closed: with an identity minted, authentication is on, and a pod missing any file must not start.
  if (has(CredentialKey.NatsCreds)) env.push({ name: AUTH_ENV, value: "required" }, { name: CredentialEnv.NatsCreds, value: file(CredentialKey.NatsCreds) });
  if (has(CredentialKey.Ca)) env.push({ name: CredentialEnv.NatsCa, value: file(CredentialKey.Ca) });
  // Keys are files, never environment values (the previous interrupt key is read from beside the current one).
  if (has(CredentialKey.InterruptKey)) env.push({ name: CredentialEnv.InterruptKey, value: file(CredentialKey.InterruptKey) });
  if (has(CredentialKey.OwnerTagKey)) env.push({ name: CredentialEnv.OwnerTagKey, value: file(CredentialKey.OwnerTagKey) });
  if (has(CredentialKey.ApiKeys)) env.push({ name: CredentialEnv.ApiKeysFile, value: file(CredentialKey.ApiKeys) });
  if (has(CredentialKey.EngineApiKey)) env.push({ name: CredentialEnv.EngineApiKey, value: file(CredentialKey.EngineApiKey) });
  return {
    // 0440 with the pod's fsGroup: readable by the non-root process, by nobody else.
    volumes: [{ name: VOLUME, secret: { secretName: creds.secretName, defaultMode: 0o440 } }],
    mounts: [{ name: VOLUME, mountPath: CREDENTIALS_DIR, readOnly: true }],
    env,
    annotations: { [CREDENTIALS_ANNOTATION]: creds.fingerprint },
  };
}
