/**
 * @module Interlace in the single-node cluster (hack/cluster.ts), as a user
 * installs it: `helm install` of charts/interlace with the local images, a
 * model server in the cluster (a generated GGUF on a hostPath, served over
 * HTTP the way an air-gapped user serves a model), and the samples applied
 * with their EnginePool's model pointed at that server. Waits until every
 * workload is Running and Ready, and fails with the pod's log as soon as one
 * crash-loops or cannot start. Used by the cluster e2e test and
 * `bash hack/cluster.sh up`.
 */
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, stringify } from "yaml";
import { InterlaceKinds, type InferencePool } from "../operator/src/api/index.js";
import { ensureModel, sha256File } from "../engine-pod/src/model/index.js";
import { applyManifest, kubeRequest, type Manifest } from "./control-plane.js";
import { imageRef, type Cluster } from "./cluster.js";
import { envoyBootstrap } from "./envoy.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const RELEASE = "interlace";
export const RELEASE_NS = "interlace-system";
export const APP_NS = "default";
/** The in-cluster model server's Service (in the app namespace). */
export const MODEL_SERVICE = "models";
/**
 * Samples that need something outside this cluster: the upstream-backend
 * EnginePool fronts a vLLM server that is not here, and the fine-tuned
 * model's pool (and its app) needs Gemma and its adapter on the node.
 */
const SAMPLES_NEEDING_OUTSIDE = new Set(["enginepool-vllm.yaml", "enginepool-cml.yaml", "agentapp-cml.yaml"]);

/** Waiting reasons that never fix themselves: fail at once with the pod's log. */
const FATAL_WAITING = new Set(["ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError", "CreateContainerError", "InvalidImageName", "RunContainerError"]);

interface ContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  state?: { waiting?: { reason?: string; message?: string }; running?: unknown; terminated?: { reason?: string; exitCode?: number } };
}
export interface PodView {
  metadata: { name: string; namespace: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[]; containerStatuses?: ContainerStatus[]; initContainerStatuses?: ContainerStatus[] };
}

export function yamlDocs(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null && typeof m === "object" && "kind" in m);
}

/**
 * A client API key the router accepts: the first `principal:key` line of the
 * Secret the chart makes by default (`<release>-router-api-keys`); none when
 * the release runs an open API (`router.apiKeys.generate=false`).
 */
export async function routerApiKey(cluster: Cluster): Promise<string | undefined> {
  const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `/api/v1/namespaces/${RELEASE_NS}/secrets/${RELEASE}-router-api-keys`);
  if (res.status === 404) return undefined;
  const data = (res.body as { data?: Record<string, string> }).data ?? {};
  const line = Buffer.from(data["api-keys"] ?? "", "base64").toString("utf8").split("\n").find((l) => l.includes(":"));
  return line?.slice(line.indexOf(":") + 1).trim();
}

/** The Authorization header for {@link routerApiKey} (empty for an open API). */
export function authHeader(key: string | undefined): Record<string, string> {
  return key === undefined ? {} : { authorization: `Bearer ${key}` };
}

/** `helm install` of the chart with the local images (and any extra `--set`s); returns helm's output. */
export async function helmInstall(cluster: Cluster, extraSets: string[] = []): Promise<string> {
  const { interlace, nats } = cluster.images;
  const sets = [
    `image.repository=${interlace.repository}`,
    `image.tag=${interlace.tag}`,
    "image.pullPolicy=IfNotPresent",
    `nats.image.repository=${nats.repository}`,
    `nats.image.tag=${nats.tag}`,
    // The samples' namespace gets the engine, picker and runner NetworkPolicies (the cluster enforces
    // them), and the gateway pod (gatewayManifests) is let in to the InferencePool's engines and picker.
    `networkPolicy.appNamespaces={${APP_NS}}`,
    `networkPolicy.gatewayPeers[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=${GATEWAY}`,
    ...extraSets,
  ];
  return cluster.helm(["install", RELEASE, path.join(ROOT, "charts/interlace"), "--namespace", RELEASE_NS, "--create-namespace", ...sets.flatMap((s) => ["--set", s])]);
}

/** The model server: a Deployment + Service serving one generated GGUF from a hostPath over HTTP. */
export function modelServerManifests(image: string, hostFile: string, fileName: string): Manifest[] {
  const server = [
    "const http = require('node:http'); const fs = require('node:fs');",
    "const file = '/models/' + process.argv[1];",
    "http.createServer((req, res) => {",
    "  if (req.url === '/healthz') { res.end('ok'); return; }",
    "  if (req.url !== '/' + process.argv[1]) { res.writeHead(404).end(); return; }",
    "  res.writeHead(200, { 'content-length': fs.statSync(file).size, 'content-type': 'application/octet-stream' });",
    "  fs.createReadStream(file).pipe(res);",
    "}).listen(8080);",
    "process.on('SIGTERM', () => process.exit(0));",
  ].join("\n");
  return singlePodService(MODEL_SERVICE, {
    name: "models",
    image,
    imagePullPolicy: "IfNotPresent",
    command: ["node", "-e", server, fileName],
    ports: [{ name: "http", containerPort: 8080 }],
    readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 2 },
    resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "128Mi" } },
    volumeMounts: [{ name: "models", mountPath: `/models/${fileName}`, readOnly: true }],
  }, [{ name: "models", hostPath: { path: hostFile, type: "File" } }]);
}

/**
 * A hardened single-pod Deployment (non-root, read-only root filesystem, no
 * capabilities, no service-account token) and its Service on the container's
 * `http` port 8080, in the app namespace: the test cluster's helpers (the
 * model server, the gateway).
 */
export function singlePodService(name: string, container: Record<string, unknown>, volumes: Record<string, unknown>[]): Manifest[] {
  const labels = { "app.kubernetes.io/name": name };
  // (A variable, not a literal: Manifest's metadata type names only name and namespace.)
  const metadata = { name, namespace: APP_NS, labels };
  const hardened = { ...container, securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } } };
  return [
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata,
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: "RuntimeDefault" } },
            containers: [hardened],
            volumes,
          },
        },
      },
    },
    { apiVersion: "v1", kind: "Service", metadata, spec: { selector: labels, ports: [{ name: "http", port: 8080, targetPort: "http" }] } },
  ];
}

/**
 * What an EnginePool on this cluster declares in `spec.egress`: its engine
 * pods download the model from the model server (in the samples' namespace),
 * which the operator's per-pool NetworkPolicies (`networkPolicy.perPool`)
 * otherwise cut.
 */
export const MODEL_SERVER_EGRESS = { namespace: APP_NS, podLabels: { "app.kubernetes.io/name": MODEL_SERVICE }, ports: [{ port: 8080 }] };

/**
 * samples/ as this cluster runs them: every model source becomes the
 * in-cluster model server's URL (with its sha256), the EnginePool asks
 * for what a 2-core node has left and may reach the model server.
 */
export function clusterSamples(modelUrl: string, sha256: string): Manifest[] {
  const docs = readdirSync(path.join(ROOT, "samples"))
    .filter((f) => /\.ya?ml$/.test(f) && !SAMPLES_NEEDING_OUTSIDE.has(f))
    .sort()
    .flatMap((f) => yamlDocs(readFileSync(path.join(ROOT, "samples", f), "utf8")));
  return docs.map((m) => {
    if (m.kind !== "EnginePool") return m;
    const spec = structuredClone(m["spec"]) as { model?: { url?: string }; draftModel?: { model?: { url?: string } }; resources?: Record<string, unknown>; runtime?: Record<string, unknown>; egress?: unknown[] };
    if (spec.model !== undefined) spec.model = { url: modelUrl, sha256 } as never;
    if (spec.draftModel?.model !== undefined) spec.draftModel.model = { url: modelUrl, sha256 } as never;
    spec.resources = { cpu: "250m", memory: "1536Mi" };
    spec.runtime = { ...spec.runtime, contextSize: 4096, parallelSequences: 2 };
    spec.egress = [...(spec.egress ?? []), MODEL_SERVER_EGRESS];
    return { ...m, spec };
  });
}

/** Serves a generated model in the cluster and applies the samples; returns the model's URL. */
export async function applySamples(cluster: Cluster): Promise<{ modelUrl: string; applied: string[] }> {
  const modelFile = await ensureModel({ preset: "test", seed: 1 });
  const sha256 = await sha256File(modelFile);
  const fileName = "interlace-test.gguf";
  const kc = cluster.cp.kubeConfig;
  for (const m of modelServerManifests(imageRef(cluster.images.interlace), modelFile, fileName)) await applyManifest(kc, m, { namespace: APP_NS, fieldManager: "kubectl" });
  const modelUrl = `http://${MODEL_SERVICE}.${APP_NS}.svc:8080/${fileName}`;
  const samples = clusterSamples(modelUrl, sha256);
  for (const m of samples) await applyManifest(kc, m, { namespace: APP_NS, fieldManager: "kubectl" });
  return { modelUrl, applied: samples.map((m) => `${m.kind}/${m.metadata.name}`) };
}

/** The gateway's name (ConfigMap, Deployment, Service) in the app namespace. */
export const GATEWAY = "gateway";

/**
 * An Envoy pod as the gateway in front of an InferencePool, configured as a
 * GAIE data plane (hack/envoy.ts's bootstrap): ext_proc to the pool's
 * endpoint picker (its Service's ClusterIP and port, as the InferencePool's
 * `endpointPickerRef` names it), an ORIGINAL_DST cluster to the engine the
 * picker names. A ConfigMap with the bootstrap, a Deployment, a Service.
 */
export function gatewayManifests(image: string, picker: { address: string; port: number }): Manifest[] {
  const bootstrap = envoyBootstrap({ listen: { address: "0.0.0.0", port: 8080 }, admin: { address: "127.0.0.1", port: 9901 }, pickers: [picker] });
  return [
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: GATEWAY, namespace: APP_NS }, data: { "envoy.json": JSON.stringify(bootstrap, null, 2) } },
    ...singlePodService(
      GATEWAY,
      {
        name: "envoy",
        image,
        imagePullPolicy: "IfNotPresent",
        args: ["-c", "/etc/envoy/envoy.json", "--log-level", "warning", "--concurrency", "1"],
        ports: [{ name: "http", containerPort: 8080 }],
        readinessProbe: { tcpSocket: { port: "http" }, periodSeconds: 2 },
        resources: { requests: { cpu: "50m", memory: "64Mi" }, limits: { memory: "256Mi" } },
        volumeMounts: [
          { name: "config", mountPath: "/etc/envoy", readOnly: true },
          { name: "tmp", mountPath: "/tmp" },
        ],
      },
      [
        { name: "config", configMap: { name: GATEWAY } },
        { name: "tmp", emptyDir: {} },
      ],
    ),
  ];
}

/**
 * Puts the gateway in front of InferencePool `pool` (app namespace): reads
 * the pool's `endpointPickerRef`, resolves that Service's ClusterIP, applies
 * {@link gatewayManifests}; returns the gateway Service's URL (reachable from
 * the host through kube-proxy).
 */
export async function applyGateway(cluster: Cluster, pool: string): Promise<string> {
  const kc = cluster.cp.kubeConfig;
  const ip = (await kubeRequest(kc, "GET", `/apis/inference.networking.k8s.io/v1/namespaces/${APP_NS}/inferencepools/${pool}`)).body as InferencePool;
  const ref = ip.spec?.endpointPickerRef;
  if (ref?.port === undefined) throw new Error(`InferencePool ${pool} has no endpointPickerRef with a port: ${JSON.stringify(ip)}`);
  const svc = (await kubeRequest(kc, "GET", `/api/v1/namespaces/${APP_NS}/services/${ref.name}`)).body as { spec?: { clusterIP?: string } };
  if (svc.spec?.clusterIP === undefined) throw new Error(`the endpoint picker Service ${ref.name} is missing`);
  for (const m of gatewayManifests(imageRef(cluster.images.envoy), { address: svc.spec.clusterIP, port: ref.port.number })) await applyManifest(kc, m, { namespace: APP_NS, fieldManager: "kubectl" });
  const gw = (await kubeRequest(kc, "GET", `/api/v1/namespaces/${APP_NS}/services/${GATEWAY}`)).body as { spec?: { clusterIP?: string } };
  return `http://${gw.spec?.clusterIP ?? ""}:8080`;
}

/** Renders manifests as one YAML stream (what `kubectl apply -f -` reads). */
export function toYaml(ms: Manifest[]): string {
  return ms.map((m) => stringify(m)).join("---\n");
}

export async function listPods(cluster: Cluster, namespace: string, labelSelector?: string): Promise<PodView[]> {
  const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `/api/v1/namespaces/${namespace}/pods`, labelSelector ? { query: { labelSelector } } : {});
  return ((res.body as { items?: PodView[] }).items ?? []).filter((p) => p.metadata.deletionTimestamp === undefined);
}

/** A container's log through the API server (kubelet), the previous instance's when it restarted. */
export async function podLog(cluster: Cluster, pod: PodView, container: string, previous: boolean): Promise<string> {
  const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/log`, {
    query: { container, tailLines: "40", ...(previous ? { previous: "true" } : {}) },
  });
  return typeof res.body === "string" ? res.body : JSON.stringify(res.body);
}

/** Throws (with the container's log) when a pod in `namespace` crash-loops or cannot start its containers. */
export async function failOnBrokenPods(cluster: Cluster, namespace: string): Promise<void> {
  for (const pod of await listPods(cluster, namespace)) {
    for (const c of [...(pod.status.initContainerStatuses ?? []), ...(pod.status.containerStatuses ?? [])]) {
      const reason = c.state?.waiting?.reason;
      const crashed = reason !== undefined && FATAL_WAITING.has(reason);
      // A restart or two while NATS elects its JetStream leader is start-up order, not a crash loop.
      if (crashed || c.restartCount >= 3) {
        const log = await podLog(cluster, pod, c.name, c.restartCount > 0).catch((err: Error) => `(no log: ${err.message})`);
        throw new Error(`pod ${namespace}/${pod.metadata.name} container ${c.name}: ${reason ?? "restarting"} (${c.restartCount} restarts) ${c.state?.waiting?.message ?? ""}\n--- log ---\n${log}`);
      }
    }
  }
}

/** Deployments and StatefulSets in `namespace` whose pods are not all Ready. */
async function unreadyWorkloads(cluster: Cluster, namespace: string): Promise<string[]> {
  const pending: string[] = [];
  for (const kind of ["deployments", "statefulsets"]) {
    const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `/apis/apps/v1/namespaces/${namespace}/${kind}`);
    for (const w of (res.body as { items?: any[] }).items ?? []) {
      const want = w.spec.replicas ?? 1;
      const ready = w.status?.readyReplicas ?? 0;
      const current = w.status?.observedGeneration === w.metadata.generation;
      const updated = kind === "deployments" ? (w.status?.updatedReplicas ?? 0) === want && (w.status?.replicas ?? 0) === want : true;
      if (!current || ready !== want || !updated) pending.push(`${kind}/${w.metadata.name} ${ready}/${want}`);
    }
  }
  return pending;
}

/** Interlace resources in `namespace` whose Ready condition is not True (or not for the current generation). */
export async function unreadyInterlace(cluster: Cluster, namespace: string): Promise<string[]> {
  const pending: string[] = [];
  for (const def of Object.values(InterlaceKinds)) {
    const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `/apis/${def.group}/${def.version}/namespaces/${namespace}/${def.plural}`);
    for (const o of (res.body as { items?: any[] }).items ?? []) {
      const ready = (o.status?.conditions ?? []).find((c: any) => c.type === "Ready");
      if (ready?.status !== "True" || o.status?.observedGeneration !== o.metadata.generation) pending.push(`${def.kind}/${o.metadata.name} (${ready?.reason ?? "no status"})`);
    }
  }
  return pending;
}

/**
 * Waits until every Deployment and StatefulSet in the namespaces has all its
 * pods Ready (and, with `interlace`, the Interlace resources in them are
 * Ready); fails at once when a pod crash-loops.
 */
export async function waitReady(cluster: Cluster, namespaces: string[], timeoutMs: number, opts: { interlace?: boolean } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending: string[] = [];
  while (Date.now() < deadline) {
    pending = [];
    for (const ns of namespaces) {
      await failOnBrokenPods(cluster, ns);
      pending.push(...(await unreadyWorkloads(cluster, ns)).map((p) => `${ns}/${p}`));
      if (opts.interlace === true) pending.push(...(await unreadyInterlace(cluster, ns)).map((p) => `${ns}/${p}`));
    }
    if (pending.length === 0) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const pods = await Promise.all(namespaces.map((ns) => cluster.kubectl(["get", "pods", "-n", ns, "-o", "wide"]).catch((e: Error) => e.message)));
  throw new Error(`not Ready in ${timeoutMs / 1000}s: ${pending.join(", ")}\n${pods.join("\n")}`);
}

/** The router Service's ClusterIP URL (reachable from the host through kube-proxy). */
export async function routerUrl(cluster: Cluster): Promise<string> {
  const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `/api/v1/namespaces/${RELEASE_NS}/services/${RELEASE}-router`);
  const svc = res.body as { spec?: { clusterIP?: string; ports?: { port: number }[] } };
  if (svc.spec?.clusterIP === undefined) throw new Error(`router Service not found: HTTP ${res.status}`);
  return `http://${svc.spec.clusterIP}:${svc.spec.ports?.[0]?.port ?? 8080}`;
}
