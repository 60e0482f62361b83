/**
 * @module Leader election on a `coordination.k8s.io/v1` Lease (client-go's
 * leaderelection algorithm). Candidates race to write themselves as holder
 * with optimistic concurrency (PUT with resourceVersion; a lost race is a 409).
 * A lease counts as held while the record keeps changing within its duration,
 * measured on the local clock from when we last saw it change — never by
 * comparing our clock with the holder's timestamps. The leader renews every
 * retry period and steps down when it cannot renew within the renew deadline;
 * on a graceful stop it releases the lease so a standby takes over at once.
 */
import { V1MicroTime, type CoordinationV1Api, type V1Lease } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { toApiError } from "./kube-client.js";
import { abortableDelay } from "./delay.js";

export interface LeaderElectionOptions {
  /** The library's Lease API (`kubeConfig.makeApiClient(CoordinationV1Api)`). */
  leases: Pick<CoordinationV1Api, "readNamespacedLease" | "createNamespacedLease" | "replaceNamespacedLease">;
  namespace: string;
  name: string;
  /** Unique per candidate (pod name + a random suffix). */
  identity: string;
  /** How long a lease stays valid without renewal (written as whole seconds, at least 1). */
  leaseDurationMs: number;
  /** The leader steps down when it has not renewed for this long; < leaseDurationMs. */
  renewDeadlineMs: number;
  /** Pause between acquire/renew attempts. */
  retryPeriodMs: number;
  log: Logger;
  now?: () => number;
}

export interface LeaderCallbacks {
  /** Called on becoming leader; `signal` aborts when leadership ends. */
  onStartedLeading: (signal: AbortSignal) => void;
  /** Called when leadership ends (lost, or released on stop). */
  onStoppedLeading: () => void | Promise<void>;
  /** Called whenever the observed holder changes. */
  onNewLeader?: (identity: string) => void;
}

/** `promise`'s value, or `fallback` when it takes longer than `ms`. */
async function withTimeout<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Kubernetes MicroTime (the library's `V1MicroTime` writes six fractional digits). */
function microTime(ms: number): V1MicroTime {
  return new V1MicroTime(ms);
}

/** A MicroTime as read back (the library leaves the wire string) or as written (a Date), as one comparable string. */
function timeKey(t: Date | string | null | undefined): string {
  return t instanceof Date ? t.toISOString() : (t ?? "");
}

/** One candidate in a leader election. */
export class LeaderElector {
  private observedKey = "";
  private observedAt = 0;
  private observedHolder = "";
  private leading = false;
  private readonly now: () => number;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.now = opts.now ?? Date.now;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** The last holder seen on the lease ("" when none). */
  leader(): string {
    return this.observedHolder;
  }

  /**
   * Campaigns until `signal` aborts: acquire, lead while renewals succeed,
   * and campaign again after losing the lease. Releases the lease on abort.
   */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    const { retryPeriodMs, renewDeadlineMs, log } = this.opts;
    while (!signal.aborted) {
      // Acquire.
      while (!signal.aborted && !(await this.tryAcquireOrRenew(callbacks))) await abortableDelay(retryPeriodMs, signal);
      if (signal.aborted) break;
      this.leading = true;
      log.info({ identity: this.opts.identity, lease: this.opts.name }, "became leader");
      const leadership = new AbortController();
      callbacks.onStartedLeading(leadership.signal);
      // Renew.
      let lastRenew = this.now();
      while (!signal.aborted) {
        await abortableDelay(retryPeriodMs, signal);
        if (signal.aborted) break;
        // A renewal stuck on the network must not keep us leading past the
        // deadline: by then a standby may already have taken the lease.
        const budget = Math.max(0, renewDeadlineMs - (this.now() - lastRenew));
        if (await withTimeout(this.tryAcquireOrRenew(callbacks), budget, false)) lastRenew = this.now();
        else if (this.now() - lastRenew >= renewDeadlineMs || (this.observedHolder !== "" && this.observedHolder !== this.opts.identity)) {
          log.warn({ identity: this.opts.identity, holder: this.observedHolder }, "lost leadership");
          break;
        }
      }
      this.leading = false;
      leadership.abort();
      // Finish in-flight work before releasing: the standby must not start
      // reconciling while this replica still writes.
      await callbacks.onStoppedLeading();
      if (signal.aborted) await this.release();
    }
  }

  /** One attempt: true when we hold the lease afterwards. */
  async tryAcquireOrRenew(callbacks?: Pick<LeaderCallbacks, "onNewLeader">): Promise<boolean> {
    const { leases, namespace, name, identity, log } = this.opts;
    const now = this.now();
    const durationSeconds = Math.max(1, Math.ceil(this.opts.leaseDurationMs / 1000));
    try {
      const lease = await this.read();
      if (!lease) {
        const renewTime = microTime(now);
        await leases.createNamespacedLease({
          namespace,
          body: {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds: durationSeconds, acquireTime: renewTime, renewTime, leaseTransitions: 0 },
          },
        });
        this.observe(identity, `${identity}@${timeKey(renewTime)}`, now, callbacks);
        return true;
      }
      const spec = lease.spec ?? {};
      const holder = spec.holderIdentity ?? "";
      this.observe(holder, `${holder}@${timeKey(spec.renewTime)}`, now, callbacks);
      const heldByOther = holder !== "" && holder !== identity;
      const expired = this.observedAt + (spec.leaseDurationSeconds ?? durationSeconds) * 1000 <= now;
      if (heldByOther && !expired) return false;
      const transition = holder !== identity;
      const renewTime = microTime(now);
      await leases.replaceNamespacedLease({
        namespace,
        name,
        body: {
          ...lease,
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: transition ? renewTime : (spec.acquireTime ?? renewTime),
            renewTime,
            leaseTransitions: (spec.leaseTransitions ?? 0) + (transition && holder !== "" ? 1 : 0),
          },
        },
      });
      this.observe(identity, `${identity}@${timeKey(renewTime)}`, now, callbacks);
      return true;
    } catch (err) {
      const e = toApiError(err, "LEASE", "Lease", name);
      if (e.status !== 409) log.warn({ err: e, lease: name }, "lease acquire/renew failed");
      return false;
    }
  }

  /** The lease, or null when there is none. */
  private async read(): Promise<V1Lease | null> {
    try {
      return await this.opts.leases.readNamespacedLease({ namespace: this.opts.namespace, name: this.opts.name });
    } catch (err) {
      if (toApiError(err, "GET", "Lease", this.opts.name).status === 404) return null;
      throw err;
    }
  }

  /** Gives the lease up (holder cleared) so a standby need not wait for expiry. */
  private async release(): Promise<void> {
    const { leases, namespace, name, identity, log } = this.opts;
    try {
      const lease = await this.read();
      if (!lease?.spec || lease.spec.holderIdentity !== identity) return;
      // A PUT replaces the spec: leaving holderIdentity out clears it.
      const { holderIdentity: _released, ...rest } = lease.spec;
      await leases.replaceNamespacedLease({ namespace, name, body: { ...lease, spec: { ...rest, leaseDurationSeconds: 1, renewTime: microTime(this.now()) } } });
      log.info({ identity, lease: name }, "released leadership");
    } catch (err) {
      log.warn({ err: toApiError(err, "PUT", "Lease", name), lease: name }, "lease release failed");
    }
  }

  private observe(holder: string, key: string, now: number, callbacks?: Pick<LeaderCallbacks, "onNewLeader">): void {
    if (key !== this.observedKey) {
      this.observedKey = key;
      this.observedAt = now;
    }
    if (holder !== this.observedHolder) {
      this.observedHolder = holder;
      if (holder !== "") callbacks?.onNewLeader?.(holder);
    }
  }
}
