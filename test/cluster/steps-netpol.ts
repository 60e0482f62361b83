/**
 * @module The cluster test's NetworkPolicy steps (the attack table's
 * "a pod in another namespace connects to an engine, a runner or NATS"): the
 * single-node cluster enforces policies with kube-router's network-policy
 * controller (hack/cluster.ts), and the chart's policies are the ones that
 * hold. A pod in a namespace of its own tries the engine and runner pods,
 * NATS's client port (pod and Service) and its monitor port; a pod labelled
 * as Prometheus reads the monitor port and the pods' /metrics; the router pod
 * reaches the engines. Then the engines' and NATS's policies are removed and
 * the same intruder connects (the probe can connect, the policies are what
 * stop it), and they are put back.
 */
import type { Test } from "tap";
import type { Cluster } from "../../hack/cluster.js";
import { imageRef } from "../../hack/cluster.js";
import { APP_NS, RELEASE, RELEASE_NS, listPods, waitReady, type PodView } from "../../hack/cluster-interlace.js";
import { applyManifest, kubeRequest, type Manifest } from "../../hack/control-plane.js";

/** Where the intruder runs: a namespace no policy names. */
export const INTRUDER_NS = "intruder";
/** Where the stand-in for Prometheus runs (the chart's default prometheusPeers: any namespace, this label). */
export const MONITORING_NS = "monitoring";

/**
 * Tries each target from inside a pod and prints one JSON object: for
 * `tcp:HOST:PORT` "connected" or the socket error's code, for an `http://` URL
 * the status code or the error's code. A dropped SYN is a timeout.
 */
const PROBE = `
const net = require("node:net"); const http = require("node:http");
const one = (spec) => new Promise((resolve) => {
  const done = (v) => { clearTimeout(timer); resolve([spec, v]); };
  const timer = setTimeout(() => { sock?.destroy(); req?.destroy(); resolve([spec, "ETIMEDOUT"]); }, 3000);
  let sock, req;
  if (spec.startsWith("tcp:")) {
    const [host, port] = spec.slice(4).split(":");
    sock = net.connect(Number(port), host, () => { sock.destroy(); done("connected"); });
    sock.on("error", (e) => done(e.code ?? e.message));
  } else {
    req = http.get(spec, (res) => { res.resume(); done(String(res.statusCode)); });
    req.on("error", (e) => done(e.code ?? e.message));
  }
});
Promise.all(process.argv.slice(1).map(one)).then((r) => console.log(JSON.stringify(Object.fromEntries(r))));
`;

/** A pod that only waits (the project's image: it has node), to exec probes in. */
export function probePod(namespace: string, name: string, labels: Record<string, string>, image: string): Manifest {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: "RuntimeDefault" } },
      containers: [
        {
          name: "probe",
          image,
          imagePullPolicy: "IfNotPresent",
          command: ["node", "-e", "setInterval(() => {}, 1 << 30)"],
          resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "96Mi" } },
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
        },
      ],
    },
  };
  return pod as Manifest;
}

export async function probe(cluster: Cluster, pod: { namespace: string; name: string; container: string }, targets: string[]): Promise<Record<string, string>> {
  const out = await cluster.kubectl(["exec", "-n", pod.namespace, pod.name, "-c", pod.container, "--", "node", "-e", PROBE, ...targets]);
  return JSON.parse(out.trim().split("\n").at(-1) ?? "{}") as Record<string, string>;
}

/**
 * Probes until every target answers as `want` says (kube-router programs a
 * new pod's address or a policy change within seconds) or the time is up;
 * the last answers either way.
 */
export async function probeUntil(cluster: Cluster, pod: { namespace: string; name: string; container: string }, want: Record<string, (v: string) => boolean>, timeoutMs = 45_000): Promise<Record<string, string>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe(cluster, pod, Object.keys(want));
    if (Object.entries(want).every(([k, ok]) => ok(got[k] ?? "")) || Date.now() > deadline) return got;
    await new Promise((r) => setTimeout(r, 2000));
  }
}

export const connected = (v: string): boolean => v === "connected";
export const blocked = (v: string): boolean => v !== "connected" && !/^\d+$/.test(v);
const ok200 = (v: string): boolean => v === "200";

export function ipOf(pods: PodView[], what: string): string {
  const ip = pods.find((p) => p.status.podIP !== undefined && p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"))?.status.podIP;
  if (ip === undefined) throw new Error(`no Ready ${what} pod with an IP`);
  return ip;
}

/** A NetworkPolicy as it can be created again (no server-set fields). */
async function takePolicy(cluster: Cluster, namespace: string, name: string): Promise<Manifest> {
  const res = await kubeRequest(cluster.cp.kubeConfig, "GET", `/apis/networking.k8s.io/v1/namespaces/${namespace}/networkpolicies/${name}`);
  if (res.status !== 200) throw new Error(`NetworkPolicy ${namespace}/${name}: HTTP ${res.status}`);
  const np = res.body as Manifest & { metadata: Record<string, unknown> };
  const { name: n, namespace: ns, labels, annotations } = np.metadata;
  return { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: n, namespace: ns, labels, annotations }, spec: (np as { spec?: unknown }).spec } as Manifest;
}

export async function networkPolicySteps(t: Test, cluster: Cluster): Promise<void> {
  const kc = cluster.cp.kubeConfig;
  const image = imageRef(cluster.images.interlace);
  for (const ns of [INTRUDER_NS, MONITORING_NS]) await applyManifest(kc, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, { fieldManager: "kubectl" });
  await applyManifest(kc, probePod(INTRUDER_NS, "intruder", { "app.kubernetes.io/name": "intruder" }, image), { namespace: INTRUDER_NS, fieldManager: "kubectl" });
  await applyManifest(kc, probePod(MONITORING_NS, "prometheus", { "app.kubernetes.io/name": "prometheus" }, image), { namespace: MONITORING_NS, fieldManager: "kubectl" });
  await cluster.kubectl(["wait", "--for=condition=Ready", "--timeout=120s", "-n", INTRUDER_NS, "pod/intruder"]);
  await cluster.kubectl(["wait", "--for=condition=Ready", "--timeout=120s", "-n", MONITORING_NS, "pod/prometheus"]);
  const intruder = { namespace: INTRUDER_NS, name: "intruder", container: "probe" };
  const prometheus = { namespace: MONITORING_NS, name: "prometheus", container: "probe" };

  const engine = ipOf(await listPods(cluster, APP_NS, "app.kubernetes.io/component=engine"), "engine");
  const runner = ipOf(await listPods(cluster, APP_NS, "app.kubernetes.io/component=toolrunner"), "tool runner");
  const nats = ipOf(await listPods(cluster, RELEASE_NS, "app.kubernetes.io/component=nats"), "NATS");
  const natsSvc = ((await kubeRequest(kc, "GET", `/api/v1/namespaces/${RELEASE_NS}/services/${RELEASE}-nats`)).body as { spec?: { clusterIP?: string } }).spec?.clusterIP;
  if (natsSvc === undefined) throw new Error(`the ${RELEASE}-nats Service has no ClusterIP`);
  const routerPod = (await listPods(cluster, RELEASE_NS, "app.kubernetes.io/component=router"))[0];
  if (routerPod === undefined) throw new Error("no router pod");

  const attacks: Record<string, string> = {
    [`tcp:${engine}:8080`]: "an engine's session API",
    [`tcp:${runner}:8080`]: "a tool runner's port",
    [`tcp:${nats}:4222`]: "a NATS node's client port",
    [`tcp:${natsSvc}:4222`]: "NATS's client Service",
    [`tcp:${nats}:8222`]: "NATS's monitor port",
  };
  const refused = await probeUntil(cluster, intruder, Object.fromEntries(Object.keys(attacks).map((k) => [k, blocked])));
  for (const [target, what] of Object.entries(attacks)) t.ok(blocked(refused[target] ?? ""), `a pod in another namespace cannot connect to ${what} (${target}: ${refused[target]})`);

  const scrapes = {
    [`http://${nats}:8222/varz`]: ok200,
    [`http://${engine}:8080/metrics`]: ok200,
    [`http://${runner}:8080/metrics`]: ok200,
  };
  const scraped = await probeUntil(cluster, prometheus, scrapes);
  for (const target of Object.keys(scrapes)) t.equal(scraped[target], "200", `Prometheus reads ${target}`);
  const routed = await probeUntil(cluster, { namespace: RELEASE_NS, name: routerPod.metadata.name, container: "router" }, { [`tcp:${engine}:8080`]: connected });
  t.equal(routed[`tcp:${engine}:8080`], "connected", `the router (${RELEASE_NS}) reaches the engine in ${APP_NS}`);

  // The control: without the policies the same intruder gets in, so the policies are what stopped it.
  const policies = [await takePolicy(cluster, APP_NS, `${RELEASE}-engines`), await takePolicy(cluster, APP_NS, `${RELEASE}-toolrunners`), await takePolicy(cluster, RELEASE_NS, `${RELEASE}-nats`)];
  for (const p of policies) await cluster.kubectl(["delete", "networkpolicy", "-n", p.metadata.namespace ?? "", p.metadata.name]);
  const open = await probeUntil(cluster, intruder, Object.fromEntries(Object.keys(attacks).map((k) => [k, connected])));
  for (const [target, what] of Object.entries(attacks)) t.equal(open[target], "connected", `without the policies the intruder reaches ${what}`);
  for (const p of policies) await applyManifest(kc, p, { namespace: p.metadata.namespace ?? "", fieldManager: "helm" });
  const closed = await probeUntil(cluster, intruder, Object.fromEntries(Object.keys(attacks).map((k) => [k, blocked])));
  t.ok(Object.keys(attacks).every((k) => blocked(closed[k] ?? "")), "the policies put back hold again", { closed });

  for (const ns of [INTRUDER_NS, MONITORING_NS]) await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
  await waitReady(cluster, [APP_NS, RELEASE_NS], 120_000);
}
