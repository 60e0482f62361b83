/**
 * @module What every reconciler is given: the API client, the caches it
 * reads, the event recorder and the operator's build options; plus the one
 * way children are written (server-side apply, one field manager, force so a
 * hand edit of a field we own is put back).
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { FIELD_MANAGER, type BuildOptions } from "../resources/index.js";
import type { EventRecorder, KubeClient, ResourceType } from "../runtime/index.js";
import type { LiveState } from "./live-state.js";
import type { CredentialAuthority } from "../credentials/index.js";

export interface ReconcilerContext {
  client: KubeClient;
  recorder: EventRecorder;
  build: BuildOptions;
  log: Logger;
  now?: () => Date;
  /** App configs out to the routers, live figures back (NATS); absent: nothing observed. */
  live?: LiveState;
  /** How long an app API key's old value stays accepted after its Secret changes (default: DEFAULT_KEY_GRACE_MS; 0: refused at once). */
  keyGraceMs?: number;
  /** Mints each pool's credentials Secret (NATS identity, CA, keys); absent: pods get none (a laptop install). */
  credentials?: CredentialAuthority;
}

/** Applies a child object; returns the live object (with its current status). */
export function applyChild<T extends KubernetesObject>(client: Pick<KubeClient, "apply">, type: ResourceType, obj: T): Promise<T> {
  return client.apply<T>(type, obj, { fieldManager: FIELD_MANAGER, force: true });
}
