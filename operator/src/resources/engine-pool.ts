/**
 * @module EnginePool → its children: the engine Deployment (image, args,
 * model volume, GPU and memory resources, probes, the drain's grace period
 * and the pod's termination grace to match), a headless Service the
 * router resolves pod by pod, and a PodDisruptionBudget. Pure functions of
 * the EnginePool and the operator's build options.
 */
import type {
  V1Container,
  V1Deployment,
  V1PodDisruptionBudget,
  V1ResourceRequirements,
  V1Service,
  V1Volume,
  V1VolumeMount,
} from "@kubernetes/client-node";
import { SPECULATION_LIMITS } from "../../../common/src/index.js";
import { ENGINE_DRAIN_GRACE_DEFAULT_SECONDS, ENGINE_TOOL_RUNNER_HOLD_DEFAULT_SECONDS, type AdapterSource, type EnginePool, type FileSource, type ModelSource } from "../api/index.js";
import {
  CONTAINER_SECURITY,
  HOME_ENV,
  POD_NAME_ENV,
  POD_IP_ENV,
  natsEnv,
  POD_PORT,
  POD_SECURITY,
  buildHeadlessService,
  childMeta,
  httpProbes,
  selectorLabels,
  type BuildOptions,
} from "./common.js";
import { credentialsWiring, type PodCredentials } from "./credentials.js";

export const ENGINE_COMPONENT = "engine";
/** The engine image's entrypoint. */
export const ENGINE_COMMAND = ["node", "dist/engine-pod/src/main.js"];
/** The init container that checks the model and its adapters from their GGUF headers before the engine starts. */
export const CHECK_MODEL_CONTAINER = "check-model";
export const CHECK_MODEL_COMMAND = ["node", "dist/engine-pod/src/check-model.js"];

/**
 * Seconds the pod's termination grace adds to the drain's: after the grace
 * period the engine still answers the sessions it cut and closes its model
 * and NATS connection, which its own shutdown bounds at 15 s
 * (engine-pod/src/main.ts). SIGKILL must not come before.
 */
export const ENGINE_SHUTDOWN_MARGIN_SECONDS = 15;

/** The drain's grace period an EnginePool gives its engines, seconds. */
export function engineDrainGraceSeconds(pool: EnginePool): number {
  return pool.spec.drainGraceSeconds ?? ENGINE_DRAIN_GRACE_DEFAULT_SECONDS;
}

/** Names of an EnginePool's children (Deployment, Service and PDB share one). */
export function engineChildName(pool: EnginePool): string {
  return `${pool.metadata.name ?? ""}-engine`;
}

/** `http://<svc>.<ns>.svc:8080`: the headless Service, one A record per ready engine pod. */
export function engineEndpoint(pool: EnginePool): string {
  return `http://${engineChildName(pool)}.${pool.metadata.namespace ?? "default"}.svc:${POD_PORT}`;
}

/** Where a file source ends up inside the pod, and what it needs mounted / fetched. */
interface ResolvedFile {
  path: string;
  volume?: V1Volume;
  mount?: V1VolumeMount;
  init?: V1Container;
}

/** A Node one-liner run by the init container: download `url` to `dest`, verify the SHA-256 when given. */
const FETCH_SCRIPT = [
  "const [url, dest, sha] = process.argv.slice(1);",
  "const fs = require('node:fs'); const crypto = require('node:crypto');",
  "(async () => {",
  "  if (fs.existsSync(dest)) return;",
  "  const res = await fetch(url); if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);",
  "  const buf = Buffer.from(await res.arrayBuffer());",
  "  if (sha && crypto.createHash('sha256').update(buf).digest('hex') !== sha) throw new Error('sha256 mismatch');",
  "  fs.writeFileSync(dest + '.part', buf); fs.renameSync(dest + '.part', dest);",
  "})().catch((e) => { console.error(String(e)); process.exit(1); });",
].join("\n");

function resolveFile(source: FileSource, volumeName: string, mountPath: string, image: string, opts: BuildOptions, fileName = "model.gguf"): ResolvedFile {
  if (source.path !== undefined) return { path: source.path };
  if (source.pvc !== undefined) {
    return {
      path: `${mountPath}/${source.pvc.path}`,
      volume: { name: volumeName, persistentVolumeClaim: { claimName: source.pvc.claimName, readOnly: true } },
      mount: { name: volumeName, mountPath, readOnly: true },
    };
  }
  if (source.hostPath !== undefined) {
    const file = `${mountPath}/${source.hostPath.split("/").pop() ?? fileName}`;
    return {
      path: file,
      volume: { name: volumeName, hostPath: { path: source.hostPath, type: "File" } },
      mount: { name: volumeName, mountPath: file, readOnly: true },
    };
  }
  const dest = `${mountPath}/${fileName}`;
  return {
    path: dest,
    volume: { name: volumeName, emptyDir: {} },
    mount: { name: volumeName, mountPath, readOnly: true },
    init: {
      name: `fetch-${volumeName}`,
      image,
      ...(opts.imagePullPolicy ? { imagePullPolicy: opts.imagePullPolicy } : {}),
      command: ["node", "-e", FETCH_SCRIPT, source.url ?? "", dest, source.sha256 ?? ""],
      volumeMounts: [{ name: volumeName, mountPath }],
      securityContext: CONTAINER_SECURITY,
    },
  };
}

/** A model and its adapters: each file resolved on its own volume, and the engine flag listing the adapters. */
interface ResolvedModel {
  model: ResolvedFile;
  adapters: (ResolvedFile & { scale: number })[];
}

function resolveModel(source: ModelSource, volumeName: string, mountPath: string, image: string, opts: BuildOptions): ResolvedModel {
  return {
    model: resolveFile(source, volumeName, mountPath, image, opts),
    adapters: (source.adapters ?? []).map((a: AdapterSource) => ({
      ...resolveFile(a, `${volumeName}-adapter-${a.name}`, `${mountPath}-adapters/${a.name}`, image, opts, "adapter.gguf"),
      scale: a.scale ?? 1,
    })),
  };
}

/** `PATH@SCALE,...`, the engine's `--adapters` value. */
export function adapterFlag(adapters: readonly { path: string; scale: number }[]): string {
  return adapters.map((a) => (a.scale === 1 ? a.path : `${a.path}@${a.scale}`)).join(",");
}

function engineResources(pool: EnginePool): V1ResourceRequirements | undefined {
  const r = pool.spec.resources;
  if (!r) return undefined;
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  if (r.cpu !== undefined) requests["cpu"] = String(r.cpu);
  if (r.memory !== undefined) {
    requests["memory"] = String(r.memory);
    limits["memory"] = String(r.memory);
  }
  // Extended resources must have request == limit; setting the limit implies the request.
  if (r.gpus !== undefined && r.gpus > 0) limits["nvidia.com/gpu"] = String(r.gpus);
  if (Object.keys(requests).length === 0 && Object.keys(limits).length === 0) return undefined;
  return { ...(Object.keys(requests).length ? { requests } : {}), ...(Object.keys(limits).length ? { limits } : {}) };
}

/** The engine container's flags (see engine-pod/src/config.ts). */
export function engineArgs(pool: EnginePool, model: ResolvedModel | undefined, draft: ResolvedModel | undefined, opts: BuildOptions): string[] {
  const rt = pool.spec.runtime;
  const args = ["--port", String(POD_PORT)];
  if (model !== undefined) args.push("--model", model.model.path);
  if (model !== undefined && model.adapters.length > 0) args.push("--adapters", adapterFlag(model.adapters));
  if (rt.backend === "openai") {
    args.push("--backend", "openai", "--upstream-url", rt.upstreamURL ?? "");
    if (rt.upstreamModel !== undefined) args.push("--upstream-model", rt.upstreamModel);
  }
  args.push("--context-size", String(rt.contextSize ?? 4096));
  args.push("--sequences", String(rt.parallelSequences ?? 4));
  if (rt.threads !== undefined) args.push("--threads", String(rt.threads));
  if (rt.backend === "llama-cpp") args.push("--gpu", rt.device === "cuda" ? "cuda" : "false");
  if (rt.prefixStore !== undefined && rt.prefixStore > 0) args.push("--prefix-store", String(rt.prefixStore));
  args.push("--kv-policy", pool.spec.kvPolicy ?? "auto");
  args.push("--kv-retention", pool.spec.kvRetention?.policy ?? "eta", "--kv-retention-ttl-ms", String((pool.spec.kvRetention?.ttlSeconds ?? 30) * 1000));
  if (draft !== undefined) {
    const d = pool.spec.draftModel;
    args.push("--draft-model", draft.model.path, "--max-draft-tokens", String(d?.maxDraftTokens ?? SPECULATION_LIMITS.maxDraftTokens.default));
    if (d?.threads !== undefined) args.push("--draft-threads", String(d.threads));
    if (draft.adapters.length > 0) args.push("--draft-adapters", adapterFlag(draft.adapters));
  }
  const cache = pool.spec.toolCache;
  if (cache?.ttlSeconds !== undefined) args.push("--tool-cache-ttl-ms", String(cache.ttlSeconds * 1000));
  if (cache?.entriesPerSession !== undefined) args.push("--tool-cache-entries", String(cache.entriesPerSession));
  if (cache?.maxBytes !== undefined) args.push("--tool-cache-max-bytes", String(cache.maxBytes));
  if (cache?.maxOutputBytes !== undefined) args.push("--max-cached-output-bytes", String(cache.maxOutputBytes));
  args.push("--drain-grace-ms", String(engineDrainGraceSeconds(pool) * 1000));
  args.push("--tool-runner-hold-ms", String((pool.spec.toolRunnerHoldSeconds ?? ENGINE_TOOL_RUNNER_HOLD_DEFAULT_SECONDS) * 1000));
  args.push("--executor", "nats", "--nats-url", opts.natsUrl, "--pod-name", "$(POD_NAME)");
  // Heartbeats for the routers: load and resident prefixes, reached at the pod IP (POD_IP).
  args.push("--pool", `${pool.metadata.namespace ?? "default"}/${pool.metadata.name ?? ""}`);
  return args;
}

/** Memory the engine may use for swapped-out KV state (counted against the pod's memory). */
const SWAP_SIZE_LIMIT = "2Gi";

/** The engine Deployment; `creds`: the pool's credentials Secret (NATS identity, CA, interrupt key, API keys). */
export function buildEngineDeployment(pool: EnginePool, opts: BuildOptions, creds?: PodCredentials): V1Deployment {
  const name = engineChildName(pool);
  const instance = pool.metadata.name ?? "";
  const image = pool.spec.image ?? opts.image;
  const model = pool.spec.model ? resolveModel(pool.spec.model, "model", "/models", image, opts) : undefined;
  const draft = pool.spec.draftModel ? resolveModel(pool.spec.draftModel.model, "draft-model", "/draft-models", image, opts) : undefined;
  // The trap handler swaps KV state to /dev/shm (tmpfs); a container's default
  // 64 MiB there holds barely one 2k-token state, so mount a memory-backed one.
  // An openai-backend pod holds no KV state: no swap volume (and no model volume below).
  const ownKv = pool.spec.runtime.backend !== "openai";
  const volumes: V1Volume[] = [
    { name: "tmp", emptyDir: {} },
    ...(ownKv ? [{ name: "kv-swap", emptyDir: { medium: "Memory", sizeLimit: SWAP_SIZE_LIMIT } }] : []),
  ];
  const mounts: V1VolumeMount[] = [
    { name: "tmp", mountPath: "/tmp" },
    ...(ownKv ? [{ name: "kv-swap", mountPath: "/dev/shm" }] : []),
  ];
  const inits: V1Container[] = [];
  const files = [model, draft].flatMap((m) => (m ? [m.model, ...m.adapters] : []));
  for (const f of files) {
    if (f.volume) volumes.push(f.volume);
    if (f.mount) mounts.push(f.mount);
    if (f.init) inits.push(f.init);
  }
  // After any download: the model and every adapter are checked from their
  // headers, and a failure is this container's termination message, which
  // the EnginePool's status reports (the engine never starts on a bad adapter).
  const checked: [string, ResolvedModel | undefined][] = [[CHECK_MODEL_CONTAINER, model], [`${CHECK_MODEL_CONTAINER}-draft`, draft]];
  for (const [name, m] of checked) {
    if (m === undefined) continue;
    inits.push({
      name,
      image,
      ...(opts.imagePullPolicy ? { imagePullPolicy: opts.imagePullPolicy } : {}),
      command: CHECK_MODEL_COMMAND,
      args: ["--model", m.model.path, ...(m.adapters.length > 0 ? ["--adapters", adapterFlag(m.adapters)] : [])],
      volumeMounts: mounts.filter((vm) => vm.name === "tmp" || files.some((f) => f.mount?.name === vm.name)),
      terminationMessagePolicy: "FallbackToLogsOnError",
      securityContext: CONTAINER_SECURITY,
    });
  }
  const wiring = credentialsWiring(creds);
  volumes.push(...wiring.volumes);
  mounts.push(...wiring.mounts);
  const resources = engineResources(pool);
  const container: V1Container = {
    name: "engine",
    image,
    ...(opts.imagePullPolicy ? { imagePullPolicy: opts.imagePullPolicy } : {}),
    command: ENGINE_COMMAND,
    args: engineArgs(pool, model, draft, opts),
    env: [POD_NAME_ENV, POD_IP_ENV, HOME_ENV, ...natsEnv(opts), ...wiring.env],
    ports: [{ name: "http", containerPort: POD_PORT, protocol: "TCP" }],
    ...httpProbes(),
    ...(resources ? { resources } : {}),
    volumeMounts: mounts,
    securityContext: CONTAINER_SECURITY,
  };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: childMeta(pool, name, ENGINE_COMPONENT),
    spec: {
      replicas: pool.spec.replicas ?? 1,
      selector: { matchLabels: selectorLabels(ENGINE_COMPONENT, instance) },
      template: {
        metadata: {
          labels: { ...selectorLabels(ENGINE_COMPONENT, instance), "interlace.dev/enginepool": instance },
          ...(creds !== undefined ? { annotations: wiring.annotations } : {}),
        },
        spec: {
          securityContext: POD_SECURITY,
          // SIGTERM starts the drain; SIGKILL waits for its grace period and the engine's shutdown after it.
          terminationGracePeriodSeconds: engineDrainGraceSeconds(pool) + ENGINE_SHUTDOWN_MARGIN_SECONDS,
          ...(inits.length ? { initContainers: inits } : {}),
          containers: [container],
          volumes,
          ...(pool.spec.nodeSelector ? { nodeSelector: pool.spec.nodeSelector } : {}),
          ...(pool.spec.resources?.gpus ? { tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }] } : {}),
        },
      },
    },
  };
}

/** The headless Service: DNS returns every ready engine pod, the router picks one. */
export function buildEngineService(pool: EnginePool): V1Service {
  return buildHeadlessService(pool, engineChildName(pool), ENGINE_COMPONENT);
}

/** At most one engine pod voluntarily disrupted at a time (each holds live sessions' KV state). */
export function buildEnginePdb(pool: EnginePool): V1PodDisruptionBudget {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: childMeta(pool, engineChildName(pool), ENGINE_COMPONENT),
    spec: {
      maxUnavailable: 1,
      selector: { matchLabels: selectorLabels(ENGINE_COMPONENT, pool.metadata.name ?? "") },
    },
  };
}
