/**
 * @module A real single-node Kubernetes cluster on this machine, for the
 * end-to-end test and `bash hack/cluster.sh up`: etcd + kube-apiserver
 * (hack/control-plane.ts) with kube-controller-manager and kube-scheduler,
 * its own containerd (runc, CNI bridge), a kubelet, kube-proxy (iptables),
 * kube-router's network-policy controller (so NetworkPolicies hold, as on a
 * cluster with a policy-enforcing CNI) and CoreDNS, all at pinned versions and on the host's
 * loopback plus the cluster's own bridge (`interlace0`, 10.244.0.0/24, its
 * gateway 10.244.0.1 is where kube-apiserver, the kubelet and CoreDNS
 * listen). Images come from hack/images.sh (imported into the cluster's
 * containerd, nothing is pulled), JetStream storage from hostPath
 * PersistentVolumes the harness makes.
 *
 * One cluster at a time per machine (the bridge, port 53 on its gateway and
 * kube-proxy's iptables rules are host-wide); a stale one left by a dead
 * process is torn down first. Teardown (hack/cluster-teardown.sh) also runs
 * from a small watcher process when the owner dies without stopping it.
 *
 * hack/cluster-up.ts is the command around it (what `bash hack/cluster.sh up`
 * runs in the background).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { appendFile, chmod, mkdir, mkdtemp, readFile, rm, stat, statfs, writeFile } from "node:fs/promises";
import { Resolver } from "node:dns/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort, kubeRequest, startControlPlane, startProcess, tail, type ControlPlane } from "./control-plane.js";

const execFileP = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CACHE = process.env["INTERLACE_CACHE"] ?? path.join(ROOT, ".cache");
const BIN = process.env["INTERLACE_BIN"] ?? path.join(CACHE, "bin");
const TEARDOWN = path.join(ROOT, "hack/cluster-teardown.sh");
/** Which cluster folder is live on this machine, and its owner's pid. */
const CURRENT = path.join(CACHE, "cluster", "current.json");
const CNI_BIN = "/usr/lib/cni";

/**
 * The controllers a single node needs: Deployments, ReplicaSets and
 * StatefulSets become pods, Services get endpoints, the node loses its
 * not-ready taint, ServiceAccounts and the root CA ConfigMap exist for token
 * volumes, claims bind to volumes, owners' children are collected.
 */
export const CLUSTER_CONTROLLERS = [
  "deployment-controller",
  "replicaset-controller",
  "statefulset-controller",
  "garbage-collector-controller",
  "node-lifecycle-controller",
  "pod-garbage-collector-controller",
  "endpoints-controller",
  "endpointslice-controller",
  "serviceaccount-controller",
  "root-ca-certificate-publisher-controller",
  "persistentvolume-binder-controller",
  "namespace-controller",
  "disruption-controller",
];

/** One image hack/images.sh built: `repository:tag`, saved as a docker archive. */
export interface LocalImage {
  repository: string;
  tag: string;
  archive: string;
}

/** `.cache/images/images.json`, written by hack/images.sh. */
export interface LocalImages {
  interlace: LocalImage;
  nats: LocalImage;
  pause: LocalImage;
  /** The gateway of the InferencePool case (Envoy). */
  envoy: LocalImage;
}

export interface ClusterOptions {
  /** The pod network (a /24; its first address is the gateway). Default 10.244.0.0/24. */
  subnet?: string;
  /** The bridge's name. Default interlace0. */
  bridge?: string;
  nodeName?: string;
  /** hostPath PersistentVolumes to create (JetStream claims bind to them). Default 4. */
  persistentVolumes?: number;
  /** Default: `.cache/images/images.json`. */
  images?: LocalImages;
  /** Progress lines (default: none). */
  log?: (msg: string) => void;
  /** How long to wait for the node to be Ready and DNS to answer (default 180 s). */
  startTimeoutMs?: number;
}

export interface Cluster {
  cp: ControlPlane;
  /** The cluster's folder (logs of containerd, kubelet, kube-proxy, CoreDNS). */
  dir: string;
  nodeName: string;
  /** The bridge's gateway: kube-apiserver, kubelet and CoreDNS listen here. */
  gateway: string;
  images: LocalImages;
  /** Seconds each start-up step took. */
  timings: Record<string, number>;
  /** Runs the built kubectl against this cluster; resolves stdout, rejects with stderr. */
  kubectl(args: string[], input?: string): Promise<string>;
  /** Runs the built helm against this cluster. */
  helm(args: string[]): Promise<string>;
  /** Tears everything down (idempotent). */
  stop(): Promise<void>;
}

/** Reads `.cache/images/images.json` (run `bash hack/images.sh` first). */
export async function readLocalImages(file = path.join(CACHE, "images", "images.json")): Promise<LocalImages> {
  const text = await readFile(file, "utf8").catch(() => {
    throw new Error(`${file} is missing: run bash hack/images.sh`);
  });
  return JSON.parse(text) as LocalImages;
}

/** Room containerd needs per byte of image archive: its content store and the unpacked snapshots take about 2x; 3x leaves headroom. */
const UNPACK_FACTOR = 3;

/**
 * Refuses to start on a disk that cannot hold the unpacked images: a full
 * disk would otherwise fail deep inside containerd's import ("no space left
 * on device") with the cluster half up.
 */
async function requireFreeSpace(folder: string, images: LocalImages): Promise<void> {
  let archives = 0;
  for (const img of Object.values(images)) archives += (await stat(img.archive).catch(() => ({ size: 0 }))).size;
  const fs = await statfs(folder);
  const free = fs.bavail * fs.bsize;
  const need = archives * UNPACK_FACTOR;
  if (free < need) throw new Error(`${folder} has ${(free / 2 ** 30).toFixed(1)} GiB free; the cluster's images need about ${(need / 2 ** 30).toFixed(1)} GiB there (${UNPACK_FACTOR}x their ${(archives / 2 ** 30).toFixed(1)} GiB of archives): free some space (old clones, podman images) and retry`);
}

export function imageRef(img: LocalImage): string {
  return `${img.repository}:${img.tag}`;
}

async function run(cmd: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { maxBuffer: 64 << 20, env: opts.env ?? process.env }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(cmd)} ${args.join(" ")}: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Tears down a cluster a dead process left behind; refuses while a live one owns the machine. */
async function clearStale(): Promise<void> {
  const text = await readFile(CURRENT, "utf8").catch(() => undefined);
  if (text === undefined) return;
  const cur = JSON.parse(text) as { dir: string; pid: number };
  if (cur.pid !== process.pid && pidAlive(cur.pid)) {
    throw new Error(`another Interlace cluster is running (pid ${cur.pid}, ${cur.dir}): stop it first (bash hack/cluster.sh down)`);
  }
  await run("bash", [TEARDOWN, cur.dir]).catch(() => undefined);
  await rm(CURRENT, { force: true });
}

function checkPrerequisites(): void {
  const missing: string[] = [];
  for (const b of ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kube-router", "kubectl", "coredns", "helm"]) {
    if (!existsSync(path.join(BIN, b))) missing.push(`${b} (bash hack/install-tools.sh)`);
  }
  for (const b of ["/usr/bin/containerd", "/usr/bin/ctr", "/usr/sbin/runc", `${CNI_BIN}/bridge`, `${CNI_BIN}/host-local`, `${CNI_BIN}/loopback`, "/usr/sbin/ipset"]) {
    if (!existsSync(b) && !existsSync(b.replace("/usr/sbin/", "/usr/bin/"))) missing.push(`${b} (bash hack/tools/05-cluster-packages.sh)`);
  }
  if (process.getuid?.() !== 0) missing.push("root (the kubelet, containerd and kube-proxy need it)");
  if (missing.length > 0) throw new Error(`the single-node cluster needs: ${missing.join(", ")}`);
}

async function waitFor<T>(what: string, deadline: number, probe: () => Promise<T | undefined>, onTimeout: () => Promise<string>): Promise<T> {
  let last = "";
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${what} not reached in time${last ? ` (${last})` : ""}\n${await onTimeout()}`);
}

function containerdConfig(dir: string, pause: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${dir}/containerd-root"
state = "${dir}/state"
[grpc]
  address = "${dir}/containerd.sock"
[ttrpc]
  address = "${dir}/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"
[${cri}]
  sandbox_image = "${pause}"
  # Nothing here may lower oom_score_adj (the kubelet asks for -998 for
  # sandboxes); without this every sandbox fails in runc.
  restrict_oom_score_adj = true
  # Pods' network namespaces live under the cluster's folder, not /var/run/netns.
  netns_mounts_under_state_dir = true
  enable_selinux = false
[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
[${cri}.cni]
  bin_dir = "${CNI_BIN}"
  conf_dir = "${dir}/cni"
  max_conf_num = 1
`;
}

function cniConfig(dir: string, bridge: string, subnet: string, gateway: string): string {
  return JSON.stringify(
    {
      cniVersion: "0.4.0",
      name: "interlace",
      plugins: [
        {
          type: "bridge",
          bridge,
          isGateway: true,
          // The default route (Service addresses such as 10.96.0.1 included) goes through the gateway.
          isDefaultGateway: true,
          // Pods talk to each other, to Services and to the host's gateway address only.
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: "host-local", ranges: [[{ subnet, gateway }]], dataDir: `${dir}/cni-ipam` },
        },
      ],
    },
    null,
    2,
  );
}

function kubeletConfig(dir: string, gateway: string, port: number, healthzPort: number, subnet: string): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${gateway}
port: ${port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${healthzPort}
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: false }
  x509: { clientCAFile: ${dir}/ca.crt }
authorization: { mode: AlwaysAllow }
containerRuntimeEndpoint: unix://${dir}/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
enforceNodeAllocatable: []
localStorageCapacityIsolation: false
evictionHard: {}
makeIPTablesUtilChains: false
clusterDNS: [${gateway}]
clusterDomain: cluster.local
resolvConf: ${dir}/resolv.conf
podCIDR: ${subnet}
maxPods: 60
serializeImagePulls: false
podLogsDir: ${dir}/pod-logs
volumePluginDir: ${dir}/volume-plugins
`;
}

/** Starts the whole single-node cluster and waits until its node is Ready and DNS answers. */
export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const log = opts.log ?? ((): void => undefined);
  checkPrerequisites();
  await mkdir(path.dirname(CURRENT), { recursive: true });
  await clearStale();
  const images = opts.images ?? (await readLocalImages());
  const subnet = opts.subnet ?? "10.244.0.0/24";
  const gateway = subnet.replace(/\.0\/24$/, ".1");
  if (!subnet.endsWith(".0/24")) throw new Error(`subnet must be a /24 ending in .0 (got ${subnet})`);
  const bridge = opts.bridge ?? "interlace0";
  const nodeName = opts.nodeName ?? "interlace-node";
  const deadline = Date.now() + (opts.startTimeoutMs ?? 180_000);
  const timings: Record<string, number> = {};
  let t0 = Date.now();
  const step = (name: string): void => {
    timings[name] = (Date.now() - t0) / 1000;
    log(`${name}: ${timings[name]!.toFixed(1)}s`);
    t0 = Date.now();
  };

  await requireFreeSpace(os.tmpdir(), images);
  // A short folder name: containerd's socket paths must stay under 108 bytes.
  const dir = await mkdtemp(path.join(os.tmpdir(), "ilc-"));
  await writeFile(path.join(dir, "interlace-cluster"), `${process.pid}\n`);
  await writeFile(path.join(dir, "bridge"), bridge);
  await writeFile(CURRENT, JSON.stringify({ dir, pid: process.pid }));
  // Tears down after this process, however it ends.
  const reaper = spawn("bash", [TEARDOWN, "--after", String(process.pid), dir], { detached: true, stdio: "ignore", env: { ...process.env, INTERLACE_BIN: BIN } });
  reaper.unref();
  const started: ChildProcess[] = [];
  const startTracked = async (bin: string, args: string[], name: string): Promise<ChildProcess> => {
    const child = await startProcess(bin, args, path.join(dir, `${name}.log`));
    if (child.pid !== undefined) await appendFile(path.join(dir, "pgids"), `${child.pid}\n`);
    started.push(child);
    return child;
  };
  let cp: ControlPlane | undefined;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    try {
      if (reaper.pid !== undefined) process.kill(reaper.pid, "SIGKILL");
    } catch {
      // already gone
    }
    // cp.stop() below removes the control plane's folder once its processes are gone.
    await rm(path.join(dir, "control-plane-dir"), { force: true });
    await run("bash", [TEARDOWN, dir], { env: { ...process.env, INTERLACE_BIN: BIN } }).catch((err: Error) => log(`teardown: ${err.message}`));
    await cp?.stop();
    await rm(CURRENT, { force: true });
  };

  try {
    // The bridge first: kube-apiserver listens on its gateway.
    await run("ip", ["link", "add", bridge, "type", "bridge"]);
    await run("ip", ["addr", "add", `${gateway}/24`, "dev", bridge]);
    await run("ip", ["link", "set", bridge, "up"]);
    // Service addresses stay on the bridge: nothing for 10.96/16 leaves through the host's default route.
    await run("ip", ["route", "add", "10.96.0.0/16", "dev", bridge]);
    // Pod -> Service -> pod is routed through the host (teardown restores the old value).
    await writeFile(path.join(dir, "ip_forward"), (await readFile("/proc/sys/net/ipv4/ip_forward", "utf8")).trim());
    await writeFile("/proc/sys/net/ipv4/ip_forward", "1");
    // Pod-to-pod frames on the bridge must pass iptables, or no NetworkPolicy can see them (teardown restores the old value).
    const bridgeNf = "/proc/sys/net/bridge/bridge-nf-call-iptables";
    if (!existsSync(bridgeNf)) throw new Error(`${bridgeNf} is missing: load br_netfilter (modprobe br_netfilter) so that NetworkPolicies can be enforced on the bridge`);
    await writeFile(path.join(dir, "bridge-nf-call-iptables"), (await readFile(bridgeNf, "utf8")).trim());
    await writeFile(bridgeNf, "1");
    step("bridge");

    cp = await startControlPlane({ address: gateway, runPods: true, controllers: CLUSTER_CONTROLLERS });
    await writeFile(path.join(dir, "ca.crt"), cp.kubeConfig.ca);
    // The control plane's own folder goes with the cluster's (its processes stop with this one).
    await writeFile(path.join(dir, "control-plane-dir"), cp.dir);
    step("etcd + kube-apiserver");
    const kubeconfig = cp.kubeconfigPath;
    await startTracked(path.join(BIN, "kube-scheduler"), [`--kubeconfig=${kubeconfig}`, "--leader-elect=false", "--secure-port=0", "--v=0"], "kube-scheduler");

    // containerd with the local images.
    await mkdir(path.join(dir, "cni"));
    await writeFile(path.join(dir, "cni", "10-interlace.conflist"), cniConfig(dir, bridge, subnet, gateway));
    await writeFile(path.join(dir, "containerd.toml"), containerdConfig(dir, imageRef(images.pause)));
    const containerd = await startTracked("containerd", ["--config", path.join(dir, "containerd.toml"), "--log-level", "warn"], "containerd");
    const ctr = (args: string[]): Promise<string> => run("ctr", ["--address", path.join(dir, "containerd.sock"), "--namespace", "k8s.io", ...args]);
    await waitFor("containerd", deadline, async () => {
      if (containerd.exitCode !== null) throw new Error(`containerd exited (${containerd.exitCode})`);
      return (await ctr(["version"])) ? true : undefined;
    }, () => tail(path.join(dir, "containerd.log")));
    step("containerd");
    for (const img of [images.pause, images.nats, images.interlace, images.envoy]) await ctr(["images", "import", img.archive]);
    step("image import");

    // kubelet (it makes /var/lib/kubelet for its device-plugin socket whatever its root folder is)
    if (!existsSync("/var/lib/kubelet")) await writeFile(path.join(dir, "var-lib-kubelet-made"), "");
    await writeFile(path.join(dir, "resolv.conf"), "");
    const [kubeletPort, healthzPort] = [await freePort(), await freePort()];
    await writeFile(path.join(dir, "kubelet.yaml"), kubeletConfig(dir, gateway, kubeletPort, healthzPort, subnet));
    await startTracked(
      path.join(BIN, "kubelet"),
      [
        `--config=${path.join(dir, "kubelet.yaml")}`,
        `--kubeconfig=${kubeconfig}`,
        `--root-dir=${path.join(dir, "kubelet")}`,
        `--node-ip=${gateway}`,
        `--hostname-override=${nodeName}`,
        "--v=1",
      ],
      "kubelet",
    );
    const [proxyHealthz, proxyMetrics] = [await freePort(), await freePort()];
    await startTracked(
      path.join(BIN, "kube-proxy"),
      [
        `--kubeconfig=${kubeconfig}`,
        `--hostname-override=${nodeName}`,
        "--proxy-mode=iptables",
        `--cluster-cidr=${subnet}`,
        // Replies from a Service's pod go back through the host (no br_netfilter needed).
        "--masquerade-all",
        // Leave the host's conntrack settings alone (no CAP_SYS_RESOURCE-like tuning here).
        "--conntrack-max-per-core=0",
        "--conntrack-tcp-timeout-established=0",
        "--conntrack-tcp-timeout-close-wait=0",
        `--healthz-bind-address=127.0.0.1:${proxyHealthz}`,
        `--metrics-bind-address=127.0.0.1:${proxyMetrics}`,
        "--v=0",
      ],
      "kube-proxy",
    );
    await writeFile(
      path.join(dir, "Corefile"),
      `.:53 {\n  bind ${gateway}\n  errors\n  cache 5\n  kubernetes cluster.local in-addr.arpa {\n    kubeconfig ${kubeconfig}\n    pods insecure\n  }\n}\n`,
    );
    await startTracked(path.join(BIN, "coredns"), ["-conf", path.join(dir, "Corefile")], "coredns");

    await waitFor(
      `node ${nodeName} Ready`,
      deadline,
      async () => {
        const res = await kubeRequest(cp!.kubeConfig, "GET", `/api/v1/nodes/${nodeName}`);
        const conds = (res.body as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions ?? [];
        return conds.some((c) => c.type === "Ready" && c.status === "True") ? true : undefined;
      },
      async () => `kubelet:\n${await tail(path.join(dir, "kubelet.log"))}\ncontainerd:\n${await tail(path.join(dir, "containerd.log"))}`,
    );
    step("kubelet: node Ready");
    // kube-router's network-policy controller only (no routing, no service proxy: the bridge and
    // kube-proxy do those): it turns NetworkPolicies into iptables rules and ipsets on the bridge.
    // It looks its Node up at start, so it starts once the node has registered.
    const routerHealthz = await freePort();
    const kubeRouter = await startTracked(
      path.join(BIN, "kube-router"),
      [
        `--kubeconfig=${kubeconfig}`,
        `--hostname-override=${nodeName}`,
        "--run-firewall=true",
        "--run-router=false",
        "--run-service-proxy=false",
        "--enable-cni=false",
        "--service-cluster-ip-range=10.96.0.0/16",
        `--health-port=${routerHealthz}`,
        "--v=1",
      ],
      "kube-router",
    );
    const resolver = new Resolver({ timeout: 1000, tries: 1 });
    resolver.setServers([gateway]);
    await waitFor("cluster DNS", deadline, async () => ((await resolver.resolve4("kubernetes.default.svc.cluster.local")).length > 0 ? true : undefined), () => tail(path.join(dir, "coredns.log")));
    step("kube-proxy + CoreDNS");
    // Policies hold from the first pod on: the controller has hooked its chain into FORWARD.
    await waitFor("kube-router's network-policy chains", deadline, async () => {
      if (kubeRouter.exitCode !== null) throw new Error(`kube-router exited (${kubeRouter.exitCode})`);
      return (await run("iptables", ["-S", "FORWARD"])).includes("KUBE-ROUTER-FORWARD") ? true : undefined;
    }, () => tail(path.join(dir, "kube-router.log")));
    step("kube-router network policies");

    // Storage for claims (JetStream): hostPath volumes without a class bind claims without one.
    for (let i = 0; i < (opts.persistentVolumes ?? 4); i++) {
      const pvDir = path.join(dir, "pv", `pv-${i}`);
      await mkdir(pvDir, { recursive: true });
      await chmod(pvDir, 0o777);
      const res = await kubeRequest(cp.kubeConfig, "POST", "/api/v1/persistentvolumes", {
        body: {
          apiVersion: "v1",
          kind: "PersistentVolume",
          metadata: { name: `local-${i}` },
          spec: { capacity: { storage: "10Gi" }, accessModes: ["ReadWriteOnce"], persistentVolumeReclaimPolicy: "Delete", hostPath: { path: pvDir, type: "Directory" } },
        },
      });
      if (res.status !== 201) throw new Error(`creating PersistentVolume local-${i}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    }

    const env = { ...process.env, KUBECONFIG: kubeconfig };
    const kubectl = (args: string[], input?: string): Promise<string> => run(path.join(BIN, "kubectl"), args, { env, ...(input !== undefined ? { input } : {}) });
    const helm = (args: string[]): Promise<string> =>
      run(path.join(BIN, "helm"), args, { env: { ...env, HELM_CACHE_HOME: path.join(dir, "helm", "cache"), HELM_CONFIG_HOME: path.join(dir, "helm", "config"), HELM_DATA_HOME: path.join(dir, "helm", "data") } });
    return { cp, dir, nodeName, gateway, images, timings, kubectl, helm, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
