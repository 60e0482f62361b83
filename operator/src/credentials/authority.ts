/**
 * @module The operator as the cluster's credential authority: from the trust
 * root (trust-root.ts) it mints one NATS identity per component — each
 * EnginePool (`engine-pool`), each ToolPool (`runner`), the router and
 * itself — with exactly the permissions of nats-permissions.ts, scoped to its
 * namespace, and writes each into a Secret beside the pods that use it, with
 * the NATS CA (pods in app namespaces cannot mount the release namespace's
 * TLS Secret). Keys, one per purpose and namespace (derived-keys.ts):
 * engines get their namespace's interrupt key (and, after a rotation, the
 * previous one) and the router's API key; an endpoint picker gets its
 * namespace's owner-tag key; the router gets the master owner-tag key, which
 * no app namespace ever holds. Every pod is told `INTERLACE_AUTH=required`,
 * so a missing file stops it instead of turning a check off.
 *
 * Minting happens only when a Secret's contents would change (its
 * fingerprint annotation: account, identity, CA, keys), so a resync does not
 * churn credentials. The pod template carries a fingerprint of what pods
 * read only at start (identity, CA), so pods roll onto those by themselves;
 * the interrupt, owner-tag and engine API keys (and the engines' `api-keys`
 * file) are left out of it: they rotate with a grace window (key-ring.ts)
 * and pods read their files again in place, so a rotation drops no live
 * session. The operator itself reads
 * the trust root again every few seconds ({@link CredentialAuthority.watch}),
 * so a rotation needs no operator restart either.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { mintUserCreds } from "../../../common/src/security/nats-credentials.js";
import type { NatsSecurity } from "../../../common/src/security/nats-connect.js";
import { CredentialKey } from "../../../common/src/security/credential-files.js";
import { namespaceKey, type KeyPurpose } from "../../../common/src/security/derived-keys.js";
import { keyRingEntries, type KeyRing, type PreviousKey } from "../../../common/src/security/key-ring.js";
import { identityName, type NatsIdentity } from "../../../common/src/security/nats-permissions.js";
import type { EnginePool, ToolPool } from "../api/index.js";
import {
  buildCredentialsSecret,
  credentialsSecretName,
  engineChildName,
  pickerChildName,
  toolPoolChildName,
  CREDENTIALS_ANNOTATION,
  ENGINE_COMPONENT,
  FIELD_MANAGER,
  PICKER_COMPONENT,
  TOOLRUNNER_COMPONENT,
  type Owner,
  type PodCredentials,
} from "../resources/index.js";
import { abortableDelay, CoreTypes, type KubeClient } from "../runtime/index.js";
import { b64, ensureTrustRoot, type TrustMaterial } from "./trust-root.js";

export interface CredentialAuthorityOptions {
  /** The operator's namespace: where the trust root and the router's Secret live. */
  namespace: string;
  /** The trust-root Secret; absent: NATS authentication off. */
  trustRootSecret?: string;
  /** The router's credentials Secret (made in `namespace`). */
  routerSecret?: string;
  /** PEM file of the NATS CA; absent: TLS off. */
  caFile?: string;
}

/** Keys that pods read again in place (key rings): a change to them alone does not roll pods. */
const RELOADED_IN_PLACE = [CredentialKey.InterruptKey, CredentialKey.OwnerTagKey, CredentialKey.EngineApiKey, CredentialKey.ApiKeys].flatMap((k) => Object.keys(keyRingEntries(k, { current: "", previous: { key: "", validUntil: 0 } })));

/** A namespace's ring derived from a master ring: both keys derived, the same window. */
function derivedRing(current: string, previous: PreviousKey | undefined, purpose: KeyPurpose, namespace: string): KeyRing {
  const ring: KeyRing = { current: namespaceKey(current, purpose, namespace) };
  if (previous !== undefined) ring.previous = { key: namespaceKey(previous.key, purpose, namespace), validUntil: previous.validUntil };
  return ring;
}

/** The principal name the router's API key has on engines. */
export const ROUTER_PRINCIPAL = "router";

/** A master ring of the trust root: the key, and its previous one while its window lasts. */
const masterRing = (current: string, previous: PreviousKey | undefined): KeyRing => (previous !== undefined ? { current, previous } : { current });

/**
 * The engines' API key file as a ring (`api-keys`, `api-keys.previous`,
 * `.valid-until`): the router's key as the one principal, and during a
 * rotation's window its previous key as the same principal.
 */
function engineApiKeysRing(m: TrustMaterial): KeyRing {
  const line = (key: string): string => `${ROUTER_PRINCIPAL}:${key}\n`;
  return m.previousEngineApiKey !== undefined ? { current: line(m.engineApiKey), previous: { key: line(m.previousEngineApiKey.key), validUntil: m.previousEngineApiKey.validUntil } } : { current: line(m.engineApiKey) };
}

export class CredentialAuthority {
  private material: TrustMaterial | null = null;
  private ca: string | undefined;
  private operatorCreds: string | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: CredentialAuthorityOptions,
    private readonly log: Logger,
  ) {}

  /** Reads (or makes) the trust root and the CA, mints the operator's own credentials, writes the router's Secret. */
  async start(): Promise<void> {
    if (this.opts.caFile !== undefined) this.ca = readFileSync(this.opts.caFile, "utf8");
    await this.refresh();
  }

  /**
   * Re-reads the trust root and re-ensures the router's Secret; true when the
   * trust root's keys changed since the last read. The next Secret each
   * pool's reconcile ensures then carries the new keys.
   */
  async refresh(): Promise<boolean> {
    const changed = await this.reload();
    if (this.opts.routerSecret !== undefined) await this.ensureRouter(this.opts.routerSecret);
    return changed;
  }

  /**
   * Reads the trust root again every `intervalMs` (the pods' key-ring
   * cadence), so a rotation (hack/rotate-key.ts) or the end of a grace
   * window reaches the pools' and the router's Secrets without an operator
   * restart. Only the leader writes: it re-ensures the router's Secret and,
   * when the keys changed, calls `onChange` (which re-queues the pools, whose
   * reconciles re-render their Secrets). A failed read is logged and retried
   * at the next tick; the last good keys stay in use.
   */
  async watch(opts: { intervalMs: number; signal: AbortSignal; isLeader: () => boolean; onChange: () => void }): Promise<void> {
    if (this.opts.trustRootSecret === undefined) return;
    while (!opts.signal.aborted) {
      await abortableDelay(opts.intervalMs, opts.signal);
      if (opts.signal.aborted) return;
      try {
        const changed = await this.reload();
        if (!opts.isLeader()) continue;
        if (this.opts.routerSecret !== undefined) await this.ensureRouter(this.opts.routerSecret);
        if (changed) {
          this.log.info({ secret: `${this.opts.namespace}/${this.opts.trustRootSecret}` }, "the trust root changed: re-rendering the pools' credentials");
          opts.onChange();
        }
      } catch (err) {
        this.log.warn({ err }, "could not read the trust root again; keeping the last keys");
      }
    }
  }

  /** Reads the trust root (making it when absent); true when its keys differ from the last read's. */
  private async reload(): Promise<boolean> {
    if (this.opts.trustRootSecret === undefined) return false;
    const next = await ensureTrustRoot(this.client, this.opts.namespace, this.opts.trustRootSecret, this.log);
    const before = this.material;
    if (before !== null && JSON.stringify(before) === JSON.stringify(next)) return false;
    // A new account (a new trust root) needs the operator's own identity minted again.
    if (before?.accountSeed !== next.accountSeed) this.operatorCreds = await mintUserCreds(next.accountSeed, { kind: "operator" });
    this.material = next;
    return before !== null;
  }

  /** How the operator itself connects (its own `operator` identity, the CA). */
  natsSecurity(): NatsSecurity {
    return { ...(this.operatorCreds !== undefined ? { creds: this.operatorCreds } : {}), ...(this.opts.caFile !== undefined ? { caFile: this.opts.caFile } : {}) };
  }

  /** The EnginePool's Secret: its `engine-pool` identity, CA, its namespace's interrupt key(s), and the router's key as the one API key engines accept. */
  forEnginePool(pool: EnginePool): Promise<PodCredentials> {
    const namespace = pool.metadata.namespace ?? "default";
    const extra: Record<string, string> = {};
    if (this.material !== null) {
      Object.assign(extra, keyRingEntries(CredentialKey.InterruptKey, derivedRing(this.material.interruptKey, this.material.previousInterruptKey, "interrupt", namespace)));
      Object.assign(extra, keyRingEntries(CredentialKey.ApiKeys, engineApiKeysRing(this.material)));
    }
    const identity: NatsIdentity = { kind: "engine-pool", namespace, pool: pool.metadata.name ?? "" };
    return this.ensure(pool, credentialsSecretName(engineChildName(pool)), ENGINE_COMPONENT, identity, extra);
  }

  /**
   * An exposed EnginePool's endpoint picker Secret: the router's identity (the
   * picker is the router's second front door: it reads app configs and
   * heartbeats), its namespace's owner-tag key (not the router's: the picker
   * lives in the app namespace, so the sessions it opens are bound to that
   * namespace's key) and the API key towards engines.
   */
  forEndpointPicker(pool: EnginePool): Promise<PodCredentials> {
    const extra: Record<string, string> = {};
    if (this.material !== null) {
      Object.assign(extra, keyRingEntries(CredentialKey.OwnerTagKey, derivedRing(this.material.ownerTagKey, this.material.previousOwnerTagKey, "owner-tag", pool.metadata.namespace ?? "default")));
      Object.assign(extra, keyRingEntries(CredentialKey.EngineApiKey, masterRing(this.material.engineApiKey, this.material.previousEngineApiKey)));
    }
    return this.ensure(pool, credentialsSecretName(pickerChildName(pool)), PICKER_COMPONENT, { kind: "router" }, extra);
  }

  /** The ToolPool's Secret: its `runner` identity and the CA (runners never hold the interrupt key). */
  forToolPool(pool: ToolPool): Promise<PodCredentials> {
    const identity: NatsIdentity = { kind: "runner", namespace: pool.metadata.namespace ?? "default", pool: pool.metadata.name ?? "" };
    return this.ensure(pool, credentialsSecretName(toolPoolChildName(pool)), TOOLRUNNER_COMPONENT, identity, {});
  }

  /** `fingerprint`: of everything (the Secret's); `rollFingerprint`: of what pods read only at start (the pod template's). */
  private contents(identity: NatsIdentity, extra: Record<string, string>): { fingerprint: string; rollFingerprint: string; plain: Record<string, string> } {
    const plain: Record<string, string> = { ...extra, ...(this.ca !== undefined ? { [CredentialKey.Ca]: this.ca } : {}) };
    const of = (keys: string[]): string => {
      const h = createHash("sha256").update(JSON.stringify({ account: this.material?.accountPublicKey ?? null, identity: identityName(identity) }));
      for (const k of keys.sort()) h.update(`\n${k}\n${plain[k]}`);
      return h.digest("hex").slice(0, 16);
    };
    return { fingerprint: of(Object.keys(plain)), rollFingerprint: of(Object.keys(plain).filter((k) => !RELOADED_IN_PLACE.includes(k))), plain };
  }

  private async mint(identity: NatsIdentity, plain: Record<string, string>): Promise<Record<string, string>> {
    if (this.material === null) return plain;
    return { ...plain, [CredentialKey.NatsCreds]: await mintUserCreds(this.material.accountSeed, identity) };
  }

  private keysOf(plain: Record<string, string>): string[] {
    return [...Object.keys(plain), ...(this.material !== null ? [CredentialKey.NatsCreds] : [])].sort();
  }

  /** The current Secret when its fingerprint matches; else a freshly minted one, applied. */
  private async ensure(owner: Owner, name: string, component: string, identity: NatsIdentity, extra: Record<string, string>): Promise<PodCredentials> {
    const { fingerprint, rollFingerprint, plain } = this.contents(identity, extra);
    const namespace = owner.metadata.namespace ?? "default";
    const current = await this.client.get<V1Secret>(CoreTypes.Secret, namespace, name);
    if (current?.metadata?.annotations?.[CREDENTIALS_ANNOTATION] !== fingerprint) {
      const secret = buildCredentialsSecret(owner, name, component, await this.mint(identity, plain), fingerprint);
      await this.client.apply(CoreTypes.Secret, secret, { fieldManager: FIELD_MANAGER, force: true });
      this.log.info({ secret: `${namespace}/${name}`, identity: identityName(identity), fingerprint }, "minted credentials");
    }
    return { secretName: name, fingerprint: rollFingerprint, keys: this.keysOf(plain) };
  }

  /** The router's Secret (no owner: it lives as long as the release): its identity, CA, the master owner-tag key and its API key towards engines. */
  private async ensureRouter(name: string): Promise<void> {
    const extra: Record<string, string> = {};
    if (this.material !== null) {
      Object.assign(extra, keyRingEntries(CredentialKey.OwnerTagKey, masterRing(this.material.ownerTagKey, this.material.previousOwnerTagKey)));
      Object.assign(extra, keyRingEntries(CredentialKey.EngineApiKey, masterRing(this.material.engineApiKey, this.material.previousEngineApiKey)));
    }
    const identity: NatsIdentity = { kind: "router" };
    const { fingerprint, plain } = this.contents(identity, extra);
    const namespace = this.opts.namespace;
    const current = await this.client.get<V1Secret>(CoreTypes.Secret, namespace, name);
    if (current?.metadata?.annotations?.[CREDENTIALS_ANNOTATION] === fingerprint) return;
    const data = await this.mint(identity, plain);
    await this.client.apply<V1Secret>(
      CoreTypes.Secret,
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name,
          namespace,
          labels: { "app.kubernetes.io/part-of": "interlace", "app.kubernetes.io/component": "router" },
          annotations: { [CREDENTIALS_ANNOTATION]: fingerprint },
        },
        type: "Opaque",
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
      },
      { fieldManager: FIELD_MANAGER, force: true },
    );
    this.log.info({ secret: `${namespace}/${name}`, fingerprint }, "minted the router's credentials");
  }
}
