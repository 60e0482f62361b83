/**
 * @module The operator process: `npm run operator -- --kubeconfig FILE
 * --namespace NS --leader-elect --metrics-port 8081`. In-cluster config by
 * default. {@link createOperator} assembles the same thing in-process for
 * tests.
 */
import { pathToFileURL } from "node:url";
import { Shutdown, createLogger, type Logger } from "../../common/src/index.js";
import { parseOperatorOptions, DEFAULT_POD_NATS_URL, type OperatorOptions } from "./config.js";
import { JetStreamPoolCleanup, keepStreamsReplicated, NatsLiveState, noopPoolCleanup, setupControllers, unobservedLiveState, type LiveState, type PoolCleanup } from "./controllers/index.js";
import { createOperatorMetrics } from "./metrics.js";
import type { KubeConfig } from "@kubernetes/client-node";
import type { NatsSecurity } from "../../common/src/security/nats-connect.js";
import { EventRecorder, KubeClient, Manager, loadKubeConfig, toKubeConfig, type ClusterAccess, type RateLimiter } from "./runtime/index.js";
import { natsReplicas } from "../../common/src/protocol/index.js";
import { CredentialAuthority } from "./credentials/index.js";

export interface Operator {
  manager: Manager;
  /** Present when NATS authentication or TLS is configured. */
  credentials?: CredentialAuthority;
  cleanup: PoolCleanup;
  live: LiveState;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Test seams: replace the cleanup hook, pace retries, pass cluster access directly. */
export interface OperatorOverrides {
  /** Cluster access instead of `--kubeconfig`/in-cluster: a KubeConfig, or a server + CA + token record. */
  access?: KubeConfig | ClusterAccess;
  cleanup?: PoolCleanup;
  /** What is published to and read from outside the cluster (default: NATS when `--nats-url` is set). */
  live?: LiveState;
  rateLimiter?: () => RateLimiter;
  watchTimeoutSeconds?: number;
  /** Serve probes at all (default true). */
  probes?: boolean;
}

/** Assembles the manager, informers, controllers and the cleanup hook. */
export function createOperator(opts: OperatorOptions, log: Logger, overrides: OperatorOverrides = {}): Operator {
  const client = new KubeClient(overrides.access ? toKubeConfig(overrides.access) : loadKubeConfig(opts.kubeconfig));
  const metrics = createOperatorMetrics({ defaultMetrics: overrides.access === undefined });
  const manager = new Manager({
    client,
    log,
    metrics,
    ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
    ...(opts.leaderElect
      ? {
          leaderElection: {
            namespace: opts.leaseNamespace,
            name: opts.leaseName,
            identity: opts.identity,
            leaseDurationMs: opts.leaseDurationMs,
            renewDeadlineMs: opts.renewDeadlineMs,
            retryPeriodMs: opts.retryPeriodMs,
          },
        }
      : {}),
    ...(overrides.probes === false ? {} : { probePort: opts.metricsPort, probeHost: opts.metricsHost }),
    resyncMs: opts.resyncMs,
    ...(overrides.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: overrides.watchTimeoutSeconds } : {}),
  });
  const credentials =
    opts.natsAuthSecret !== undefined || opts.natsCa !== undefined
      ? new CredentialAuthority(
          client,
          {
            namespace: opts.credentialsNamespace,
            ...(opts.natsAuthSecret !== undefined ? { trustRootSecret: opts.natsAuthSecret } : {}),
            ...(opts.routerCredentialsSecret !== undefined ? { routerSecret: opts.routerCredentialsSecret } : {}),
            ...(opts.natsCa !== undefined ? { caFile: opts.natsCa } : {}),
          },
          log.child({ subsystem: "credentials" }),
        )
      : undefined;
  // Connections are made lazily, after start() has the operator's own credentials.
  const security = (): NatsSecurity => credentials?.natsSecurity() ?? {};
  const cleanup = overrides.cleanup ?? (opts.natsUrl ? new JetStreamPoolCleanup(opts.natsUrl, log, security) : noopPoolCleanup);
  const live = overrides.live ?? (opts.natsUrl ? new NatsLiveState(opts.natsUrl, log, Date.now, security) : unobservedLiveState);
  const upkeepStop = new AbortController();
  const { controllers, waker, pressure } = setupControllers(
    manager,
    {
      client,
      recorder: new EventRecorder(client, "interlace-operator", log, opts.identity),
      build: {
        image: opts.image,
        ...(opts.imagePullPolicy ? { imagePullPolicy: opts.imagePullPolicy } : {}),
        natsUrl: opts.natsUrl ?? DEFAULT_POD_NATS_URL,
        // The chart sets INTERLACE_NATS_REPLICAS to its cluster size; the pods create streams and buckets with it.
        natsReplicas: natsReplicas(),
        routerUrl: opts.routerUrl,
        picker: opts.picker,
        ...(opts.networkPolicyRelease !== undefined
          ? { networkPolicy: { releaseNamespace: opts.credentialsNamespace, release: opts.networkPolicyRelease, ...(opts.networkPolicyDnsPeers !== undefined ? { dnsPeers: opts.networkPolicyDnsPeers } : {}) } }
          : {}),
      },
      log,
      live,
      keyGraceMs: opts.keyGraceMs,
      ...(credentials !== undefined ? { credentials } : {}),
    },
    cleanup,
    { workers: opts.workers, autoscaleIntervalMs: opts.autoscaleIntervalMs, wakeCheckMs: opts.wakeCheckMs, pressureCheckMs: opts.pressureCheckMs, ...(overrides.rateLimiter ? { rateLimiter: overrides.rateLimiter } : {}) },
  );
  return {
    manager,
    ...(credentials !== undefined ? { credentials } : {}),
    cleanup,
    live,
    start: async () => {
      // The trust root (made on first start) and the router's Secret come before any reconcile mints from them.
      await credentials?.start();
      // A rotated trust root reaches the pools' Secrets without a restart: their reconciles re-render them.
      void credentials?.watch({
        intervalMs: opts.trustRootReloadMs,
        signal: upkeepStop.signal,
        isLeader: () => manager.isLeader(),
        onChange: () => {
          for (const c of controllers) if (c.name === "enginepool" || c.name === "toolpool") c.enqueueAll();
        },
      });
      // No R1 state: existing streams and buckets raised to the cluster's replica count (beside the reconcilers).
      if (opts.natsUrl) {
        void keepStreamsReplicated({ natsUrl: opts.natsUrl, replicas: natsReplicas(), security, log: log.child({ subsystem: "stream-upkeep" }), signal: upkeepStop.signal });
      }
      await manager.start();
      // Checks only while this operator leads (the autoscaler runs); cheap otherwise.
      waker.start();
      pressure.start();
    },
    stop: async () => {
      upkeepStop.abort();
      await waker.stop();
      await pressure.stop();
      await manager.stop();
      await cleanup.close();
      await live.close();
    },
  };
}

async function main(): Promise<void> {
  const opts = parseOperatorOptions();
  const log = createLogger("operator", opts.logLevel);
  const operator = createOperator(opts, log);
  const shutdown = new Shutdown(log, 20_000);
  shutdown.add("operator", () => operator.stop());
  shutdown.installSignalHandlers();
  await operator.start();
  log.info(
    { namespace: opts.namespace ?? "(all)", leaderElect: opts.leaderElect, identity: opts.identity, metricsPort: operator.manager.probePort },
    "operator started",
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`operator failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
