/**
 * @module Kubernetes Events on important transitions (became Ready, degraded,
 * cleanup failed), written as core/v1 Events so `kubectl describe` shows them.
 * Recording is best effort: a failed event never fails a reconcile.
 */
import { randomBytes } from "node:crypto";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { KubeClient } from "./kube-client.js";
import { CoreTypes } from "./resource-type.js";

export type EventType = "Normal" | "Warning";

/** Writes Events about objects on behalf of one component. */
export class EventRecorder {
  constructor(
    private readonly client: Pick<KubeClient, "create">,
    private readonly component: string,
    private readonly log: Logger,
    private readonly instance = "",
  ) {}

  /** Records one event about `obj`; resolves even when the write fails. */
  async record(obj: KubernetesObject, type: EventType, reason: string, message: string): Promise<void> {
    const meta = obj.metadata ?? {};
    const namespace = meta.namespace ?? "default";
    const now = new Date().toISOString();
    try {
      await this.client.create(CoreTypes.Event, {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: `${meta.name ?? "object"}.${randomBytes(8).toString("hex")}`, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: meta.name,
          namespace,
          uid: meta.uid,
          resourceVersion: meta.resourceVersion,
        },
        type,
        reason,
        message,
        source: { component: this.component, ...(this.instance ? { host: this.instance } : {}) },
        reportingComponent: this.component,
        reportingInstance: this.instance || this.component,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      } as KubernetesObject);
    } catch (err) {
      this.log.warn({ err, reason, object: `${namespace}/${meta.name ?? ""}` }, "failed to record event");
    }
  }
}
