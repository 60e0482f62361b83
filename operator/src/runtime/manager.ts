/**
 * @module The manager: owns the shared informers (one per kind), the
 * controllers, leader election, the probe/metrics server and shutdown order.
 * Informers run on every replica (a standby keeps warm caches); controllers
 * run only on the leader. Ready (`/readyz`) once every informer has synced.
 */
import type { Server } from "node:http";
import { CoordinationV1Api, type KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { serveProbes } from "../../../common/src/index.js";
import type { OperatorMetrics } from "../metrics.js";
import type { Controller } from "./controller.js";
import { Informer } from "./informer.js";
import type { KubeClient } from "./kube-client.js";
import { LeaderElector } from "./leader-election.js";
import type { ResourceType } from "./resource-type.js";

export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export interface ManagerOptions {
  client: KubeClient;
  log: Logger;
  metrics: OperatorMetrics;
  /** Watch one namespace; all when undefined. */
  namespace?: string;
  /** Absent: this replica reconciles without an election. */
  leaderElection?: LeaderElectionConfig;
  /** Serve /healthz /readyz /metrics here (0: a free port); absent: no server. */
  probePort?: number;
  probeHost?: string;
  resyncMs?: number;
  watchTimeoutSeconds?: number;
}

/** Runs controllers over shared informers. */
export class Manager {
  private readonly informers = new Map<string, Informer<KubernetesObject>>();
  private readonly controllers: Controller[] = [];
  private readonly abort = new AbortController();
  private elector: LeaderElector | null = null;
  private election: Promise<void> | null = null;
  private server: Server | null = null;
  private started = false;
  /** The bound probe port once started. */
  probePort = 0;

  constructor(readonly opts: ManagerOptions) {}

  /** The shared informer for a kind (created on first use; optionally label-filtered). */
  informer<T extends KubernetesObject>(type: ResourceType, labelSelector?: string): Informer<T> {
    const key = `${type.group}/${type.kind}?${labelSelector ?? ""}`;
    let inf = this.informers.get(key);
    if (!inf) {
      inf = new Informer<KubernetesObject>({
        client: this.opts.client,
        type,
        log: this.opts.log.child({ informer: type.kind }),
        ...(this.opts.namespace !== undefined ? { namespace: this.opts.namespace } : {}),
        ...(labelSelector !== undefined ? { labelSelector } : {}),
        ...(this.opts.resyncMs !== undefined ? { resyncMs: this.opts.resyncMs } : {}),
        ...(this.opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: this.opts.watchTimeoutSeconds } : {}),
      });
      this.informers.set(key, inf);
      if (this.started) inf.start();
    }
    return inf as unknown as Informer<T>;
  }

  add(controller: Controller): void {
    this.controllers.push(controller);
  }

  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.started;
  }

  /** Null when ready; otherwise why not. */
  notReadyReason(): string | null {
    if (!this.started) return "starting";
    for (const inf of this.informers.values()) if (!inf.hasSynced()) return "caches not synced";
    return null;
  }

  /** Starts informers, waits for their first list, then campaigns (or starts controllers at once). */
  async start(): Promise<void> {
    const { log, metrics } = this.opts;
    this.started = true;
    if (this.opts.probePort !== undefined) {
      const { server, port } = await serveProbes(
        this.opts.probePort,
        { registry: metrics.registry, notReadyReason: () => this.notReadyReason() },
        this.opts.probeHost,
      );
      this.server = server;
      this.probePort = port;
    }
    for (const inf of this.informers.values()) inf.start();
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync()));
    if (this.abort.signal.aborted) return;
    log.info({ informers: this.informers.size }, "caches synced");
    const le = this.opts.leaderElection;
    if (!le) {
      metrics.leader.set(1);
      for (const c of this.controllers) c.start();
      return;
    }
    this.elector = new LeaderElector({ leases: this.opts.client.kubeConfig.makeApiClient(CoordinationV1Api), log, ...le });
    this.election = this.elector.run(this.abort.signal, {
      onStartedLeading: () => {
        metrics.leader.set(1);
        for (const c of this.controllers) c.start();
      },
      onStoppedLeading: async () => {
        metrics.leader.set(0);
        await Promise.all(this.controllers.map((c) => c.stop()));
      },
      onNewLeader: (identity) => log.info({ leader: identity }, "observed leader"),
    });
  }

  /**
   * Graceful stop: finish reconciles in flight, release the lease (so a
   * standby takes over without waiting for expiry), stop watching, close the
   * probe server.
   */
  async stop(): Promise<void> {
    this.abort.abort();
    if (this.election) await this.election;
    else await Promise.all(this.controllers.map((c) => c.stop()));
    this.opts.metrics.leader.set(0);
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    if (this.server) {
      const server = this.server;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }
}
