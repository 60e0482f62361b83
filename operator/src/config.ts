/**
 * @module The operator's one options schema, parsed once at start-up from
 * flags over environment variables over defaults (common/src/config.ts).
 * Helm values map one-to-one onto these flags.
 */
import { randomBytes } from "node:crypto";
import os from "node:os";
import type { V1NetworkPolicyPeer } from "@kubernetes/client-node";
import { DEFAULT_KEY_GRACE_MS, KEY_RING_RELOAD_MS } from "../../common/src/security/key-ring.js";
import {
  boolOpt,
  defaultSource,
  enumOpt,
  intOpt,
  optionalStringOpt,
  stringOpt,
  InterlaceError,
  ErrorCode,
  type Source,
} from "../../common/src/index.js";

export const DEFAULT_IMAGE = "ghcr.io/interlace-dev/interlace:0.1.0";
/** What engine and runner pods are told when the operator has no `--nats-url`. */
export const DEFAULT_POD_NATS_URL = "nats://interlace-nats:4222";
export const DEFAULT_ROUTER_URL = "http://interlace-router:8080";
export const PULL_POLICIES = ["Always", "IfNotPresent", "Never"] as const;

/** The endpoint pickers' placement flags (validated again by the picker; the chart's schema checks the policy name). */
export interface PickerPlacement {
  placement: string;
  loadFactorPercent: number;
  prefixSlack: number;
  prefixWaitMs: number;
  engineTtlMs: number;
  /** Hot-prefix warming (the router's `--prefix-warm-*`): sessions in the window that make an app hot (0: off), the window, and the share of an engine's sequences that must be free. */
  prefixWarmSessions: number;
  prefixWarmWindowMs: number;
  prefixWarmMinFreePercent: number;
  /** Apps' home engines (the router's `--app-homes`). */
  appHomes: boolean;
}

export interface OperatorOptions {
  /** A kubeconfig file; absent: in-cluster config (service account), else the default loading rules. */
  kubeconfig?: string;
  /** Reconcile objects in this namespace only; absent: all namespaces. */
  namespace?: string;
  leaderElect: boolean;
  leaseName: string;
  leaseNamespace: string;
  /** This replica's identity in the election. */
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** /metrics /healthz /readyz (0: a free port). */
  metricsPort: number;
  metricsHost: string;
  /** Image of engine and tool-runner pods (a pool's `spec.image` overrides it). */
  image: string;
  imagePullPolicy?: (typeof PULL_POLICIES)[number];
  /** NATS for engine/runner pods and for ToolPool cleanup; absent: pods get {@link DEFAULT_POD_NATS_URL}, no cleanup. */
  natsUrl?: string;
  routerUrl: string;
  /** The trust-root Secret in {@link credentialsNamespace} (made when absent); absent: no NATS authentication. */
  natsAuthSecret?: string;
  /** The router's credentials Secret the operator writes in {@link credentialsNamespace}. */
  routerCredentialsSecret?: string;
  /** PEM file of the NATS CA: the operator connects with TLS and copies it into every pool's credentials Secret. */
  natsCa?: string;
  /**
   * The Helm release (its pods' `app.kubernetes.io/instance`): when set, the
   * operator renders a NetworkPolicy per EnginePool and ToolPool
   * (resources/network-policy.ts), with the release's router, operator and
   * NATS pods in {@link credentialsNamespace} as their peers.
   */
  networkPolicyRelease?: string;
  /**
   * Where the per-pool policies let pods resolve names (NetworkPolicy peers,
   * port 53); absent: the `k8s-app: kube-dns` pods. A cluster whose DNS is
   * not such a pod (NodeLocal DNSCache, a host process) names it here.
   */
  networkPolicyDnsPeers?: V1NetworkPolicyPeer[];
  /** Where the trust root and the router's Secret live (the operator's own namespace). */
  credentialsNamespace: string;
  /** How often the trust-root Secret is read again, so a rotated key reaches the pools' Secrets without a restart (ms). */
  trustRootReloadMs: number;
  workers: number;
  /** Re-queue every object this often (0: never). */
  resyncMs: number;
  /** How long an app API key whose value changed in its Secret stays accepted (0: the old value is refused at once). */
  keyGraceMs: number;
  /** How often the joint autoscaler samples each AgentApp's signals and decides (ms). */
  autoscaleIntervalMs: number;
  /** How often, between ticks, builtin pools at zero are checked for waiting work that should wake them at once (ms; 0: only at ticks). */
  wakeCheckMs: number;
  /** How often, between ticks, apps with builtin pools with replicas are checked for a scale-up their pass would make now (ms; 0: only at ticks). */
  pressureCheckMs: number;
  /** Placement settings of the endpoint pickers it runs (the chart passes the router's, so both front doors place alike). */
  picker: PickerPlacement;
  logLevel: string;
}

/**
 * Reads `--kubeconfig --namespace --leader-elect --lease-name
 * --lease-namespace --identity --lease-duration-ms --renew-deadline-ms
 * --retry-period-ms --metrics-port --metrics-host --image
 * --image-pull-policy --nats-url --router-url --nats-auth-secret
 * --router-credentials-secret --nats-ca --credentials-namespace --workers
 * --resync-ms --key-grace-ms --autoscale-interval-ms --wake-check-ms --pressure-check-ms --picker-placement --picker-load-factor --picker-prefix-slack --picker-prefix-wait-ms
 * --picker-engine-ttl-ms --picker-prefix-warm-sessions --picker-prefix-warm-window-ms --picker-prefix-warm-min-free --picker-app-homes --log-level` (each also as an upper-snake
 * environment variable).
 */
export function parseOperatorOptions(src: Source = defaultSource()): OperatorOptions {
  const kubeconfig = optionalStringOpt(src, "kubeconfig");
  const namespace = optionalStringOpt(src, "namespace");
  const natsUrl = optionalStringOpt(src, "nats-url");
  const pullRaw = optionalStringOpt(src, "image-pull-policy");
  const natsAuthSecret = optionalStringOpt(src, "nats-auth-secret");
  const routerCredentialsSecret = optionalStringOpt(src, "router-credentials-secret");
  const natsCa = optionalStringOpt(src, "nats-ca");
  const networkPolicyRelease = optionalStringOpt(src, "network-policy-release");
  const dnsPeersRaw = optionalStringOpt(src, "network-policy-dns-peers");
  const networkPolicyDnsPeers = dnsPeersRaw !== undefined && dnsPeersRaw !== "" ? parseDnsPeers(dnsPeersRaw) : undefined;
  const leaseDurationMs = intOpt(src, "lease-duration-ms", 15_000, { min: 1000, max: 600_000 });
  const renewDeadlineMs = intOpt(src, "renew-deadline-ms", 10_000, { min: 100, max: 600_000 });
  const retryPeriodMs = intOpt(src, "retry-period-ms", 2_000, { min: 10, max: 600_000 });
  if (renewDeadlineMs >= leaseDurationMs) {
    throw new InterlaceError(ErrorCode.BadRequest, "--renew-deadline-ms must be shorter than --lease-duration-ms");
  }
  if (retryPeriodMs >= renewDeadlineMs) {
    throw new InterlaceError(ErrorCode.BadRequest, "--retry-period-ms must be shorter than --renew-deadline-ms");
  }
  const host = src.env["POD_NAME"] ?? os.hostname();
  const pickerPlacement = stringOpt(src, "picker-placement", "prefix-affinity");
  if (!/^[a-z][a-z-]{0,62}$/.test(pickerPlacement)) throw new InterlaceError(ErrorCode.BadRequest, `invalid --picker-placement "${pickerPlacement}"`);
  return {
    ...(kubeconfig ? { kubeconfig } : {}),
    ...(namespace ? { namespace } : {}),
    leaderElect: boolOpt(src, "leader-elect", false),
    leaseName: stringOpt(src, "lease-name", "interlace-operator"),
    leaseNamespace: stringOpt(src, "lease-namespace", src.env["POD_NAMESPACE"] ?? namespace ?? "default"),
    identity: stringOpt(src, "identity", `${host}_${randomBytes(4).toString("hex")}`),
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
    metricsPort: intOpt(src, "metrics-port", 8081, { min: 0, max: 65535 }),
    metricsHost: stringOpt(src, "metrics-host", "0.0.0.0"),
    image: stringOpt(src, "image", DEFAULT_IMAGE),
    ...(pullRaw !== undefined ? { imagePullPolicy: enumOpt(src, "image-pull-policy", PULL_POLICIES, "IfNotPresent") } : {}),
    ...(natsUrl ? { natsUrl } : {}),
    routerUrl: stringOpt(src, "router-url", DEFAULT_ROUTER_URL),
    ...(natsAuthSecret ? { natsAuthSecret } : {}),
    ...(routerCredentialsSecret ? { routerCredentialsSecret } : {}),
    ...(natsCa ? { natsCa } : {}),
    ...(networkPolicyRelease ? { networkPolicyRelease } : {}),
    ...(networkPolicyDnsPeers !== undefined ? { networkPolicyDnsPeers } : {}),
    credentialsNamespace: stringOpt(src, "credentials-namespace", src.env["POD_NAMESPACE"] ?? namespace ?? "default"),
    trustRootReloadMs: intOpt(src, "trust-root-reload-ms", KEY_RING_RELOAD_MS, { min: 100, max: 600_000 }),
    workers: intOpt(src, "workers", 2, { min: 1, max: 64 }),
    resyncMs: intOpt(src, "resync-ms", 300_000, { min: 0 }),
    keyGraceMs: intOpt(src, "key-grace-ms", DEFAULT_KEY_GRACE_MS, { min: 0, max: 7 * 86_400_000 }),
    autoscaleIntervalMs: intOpt(src, "autoscale-interval-ms", 10_000, { min: 100, max: 600_000 }),
    wakeCheckMs: intOpt(src, "wake-check-ms", 1_000, { min: 0, max: 600_000 }),
    pressureCheckMs: intOpt(src, "pressure-check-ms", 2_000, { min: 0, max: 600_000 }),
    picker: {
      placement: pickerPlacement,
      loadFactorPercent: intOpt(src, "picker-load-factor", 125, { min: 100, max: 1000 }),
      prefixSlack: intOpt(src, "picker-prefix-slack", 2, { min: 0, max: 10_000 }),
      prefixWaitMs: intOpt(src, "picker-prefix-wait-ms", 1000, { min: 0, max: 600_000 }),
      engineTtlMs: intOpt(src, "picker-engine-ttl-ms", 3000, { min: 500, max: 60_000 }),
      prefixWarmSessions: intOpt(src, "picker-prefix-warm-sessions", 3, { min: 0, max: 10_000 }),
      prefixWarmWindowMs: intOpt(src, "picker-prefix-warm-window-ms", 20_000, { min: 100, max: 3_600_000 }),
      prefixWarmMinFreePercent: intOpt(src, "picker-prefix-warm-min-free", 50, { min: 0, max: 100 }),
      appHomes: enumOpt(src, "picker-app-homes", ["on", "off"] as const, "on") === "on",
    },
    logLevel: stringOpt(src, "log-level", "info"),
  };
}

/** `--network-policy-dns-peers`: a JSON array of NetworkPolicy peers (objects with podSelector, namespaceSelector or ipBlock). */
function parseDnsPeers(text: string): V1NetworkPolicyPeer[] {
  let peers: unknown;
  try {
    peers = JSON.parse(text);
  } catch (err) {
    throw new InterlaceError(ErrorCode.BadRequest, `invalid --network-policy-dns-peers: not JSON (${(err as Error).message})`);
  }
  const known = ["podSelector", "namespaceSelector", "ipBlock"];
  if (!Array.isArray(peers) || peers.length === 0 || !peers.every((p) => typeof p === "object" && p !== null && !Array.isArray(p) && Object.keys(p).length > 0 && Object.keys(p).every((k) => known.includes(k)))) {
    throw new InterlaceError(ErrorCode.BadRequest, `invalid --network-policy-dns-peers: a non-empty JSON array of NetworkPolicy peers (${known.join(", ")})`);
  }
  return peers as V1NetworkPolicyPeer[];
}
