/**
 * @module The test control plane: a real etcd and a real kube-apiserver on
 * loopback (free ports, certificates generated with the machine's openssl,
 * static admin token, RBAC authorization, service-account signing keys), and
 * a kubeconfig for the admin. No kubelet or controller-manager runs: tests
 * mark Deployments available through the status subresource, as envtest
 * users do. The binaries come from hack/tools/20-etcd.sh and
 * 30-kube-apiserver.sh (run hack/install-tools.sh first).
 *
 * As a command (`tsx hack/control-plane.ts`) it starts one, prints the
 * kubeconfig path and runs until interrupted.
 *
 * Credentials are plain {@link KubeAccess} records (the operator turns one
 * into a `KubeConfig` with `kubeConfigFromAccess`), and {@link kubeRequest}
 * stays a raw node:https request on purpose: tests need exact status codes,
 * Status messages, dry runs, tables and apply patches, which the typed
 * client turns into exceptions or models.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile, mkdir, open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { generateCa, generateClientCert, generateServerCert, openssl } from "./certs.js";
import { freePort, retryOnPortTaken } from "./free-port.js";

export { freePort };

const execFileP = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * How to reach the API server as one user: server URL, the test CA and a
 * bearer token. Structurally a `ClusterAccess` of operator/src/runtime, so it
 * can be handed to the operator (`createOperator`'s `access`) directly.
 */
export interface KubeAccess {
  server: string;
  ca: Buffer;
  token: string;
}

/** Options of {@link startControlPlane}. */
export interface ControlPlaneOptions {
  /** Folder with `etcd` and `kube-apiserver` (default `$INTERLACE_BIN` or `.cache/bin`). */
  binDir?: string;
  /** How long to wait for `/readyz` (default 120 s: a loaded 2-core machine is slow). */
  startTimeoutMs?: number;
  /** Extra kube-apiserver flags. */
  apiServerArgs?: string[];
  /**
   * Also run kube-controller-manager with only its garbage collector, so
   * deleting an owner really deletes its children (background cascading
   * deletion) and foreground deletion completes. Needs the binary from
   * hack/tools/35-kube-controller-manager.sh. Other controllers stay off: no
   * kubelet runs, tests set Deployment status themselves.
   */
  garbageCollector?: boolean;
  /**
   * Run kube-controller-manager with exactly these controllers (overrides
   * `garbageCollector`): the single-node cluster (hack/cluster.ts) needs the
   * ones that turn Deployments and StatefulSets into pods.
   */
  controllers?: string[];
  /**
   * The address kube-apiserver listens on and advertises (default
   * 127.0.0.1). The single-node cluster uses its bridge's gateway so that
   * pods reach the API server through the `kubernetes` Service.
   */
  address?: string;
  /**
   * Pods really run: the ServiceAccount admission plugin mounts their
   * tokens, and kube-apiserver gets a client certificate for kubelets (logs,
   * exec) and reaches them by their InternalIP.
   */
  runPods?: boolean;
  /** Keep the work folder (logs, certificates) after stop, for debugging. */
  keepDir?: boolean;
}

/** A running control plane. */
export interface ControlPlane {
  /** `https://127.0.0.1:<port>`. */
  server: string;
  /** A kubeconfig file for the admin (group system:masters). */
  kubeconfigPath: string;
  /** The admin's credentials (group system:masters). */
  kubeConfig: KubeAccess;
  /** The work folder (certificates, logs, etcd data). */
  dir: string;
  /** A token for a ServiceAccount (TokenRequest API); creates the namespace and account when missing. */
  tokenFor(namespace: string, name: string, expirationSeconds?: number): Promise<string>;
  /** Credentials of the ServiceAccount (so RBAC applies); creates the namespace and account when missing. */
  kubeConfigFor(namespace: string, name: string): Promise<KubeAccess>;
  /** The same, written to a file (for child processes such as the operator). */
  kubeconfigPathFor(namespace: string, name: string): Promise<string>;
  /** Stops kube-apiserver and etcd and removes the work folder. Idempotent. */
  stop(): Promise<void>;
}

function binDirOf(opts: ControlPlaneOptions): string {
  return opts.binDir ?? process.env["INTERLACE_BIN"] ?? path.join(process.env["INTERLACE_CACHE"] ?? path.join(ROOT, ".cache"), "bin");
}

/** CA, serving certificate for 127.0.0.1/localhost, and the service-account key pair (all P-256). */
async function generateCertificates(dir: string, address: string): Promise<void> {
  await generateCa(dir);
  // 10.96.0.1: the `kubernetes` Service's ClusterIP (first address of --service-cluster-ip-range).
  const sans = ["IP:127.0.0.1", `IP:${address}`, "IP:10.96.0.1", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local"];
  await generateServerCert(dir, "apiserver", [...new Set(sans)]);
  await openssl(dir, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key"]);
  await openssl(dir, ["ec", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
}

/** Renders a kubeconfig that trusts the test CA and authenticates with a bearer token. */
export function renderKubeconfig(server: string, caPem: string, user: string, token: string): string {
  const ca = Buffer.from(caPem).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: interlace-test",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${ca}`,
    "users:",
    `- name: ${user}`,
    "  user:",
    `    token: ${token}`,
    "contexts:",
    `- name: ${user}@interlace-test`,
    "  context:",
    "    cluster: interlace-test",
    `    user: ${user}`,
    "    namespace: default",
    `current-context: ${user}@interlace-test`,
    "",
  ].join("\n");
}

/**
 * Runs `bin args` under a small bash watchdog that stops it when this Node
 * process disappears (a test killed by its timeout must not leave etcd or
 * kube-apiserver behind; Node has no PR_SET_PDEATHSIG). SIGTERM to the
 * watchdog is passed on to the child.
 */
const WATCHDOG = [
  '"$@" & child=$!',
  'trap \'kill -TERM "$child" 2>/dev/null; wait "$child"; exit $?\' TERM INT',
  'while kill -0 "$WATCH_PID" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1 & wait $!; done',
  'kill -TERM "$child" 2>/dev/null',
  'wait "$child"',
].join("\n");

export function startProcess(bin: string, args: string[], logPath: string): Promise<ChildProcess> {
  return open(logPath, "a").then((log) => {
    const child = spawn("bash", ["-c", WATCHDOG, "watchdog", bin, ...args], {
      // Its own process group, so a stuck shutdown can be killed as a whole (watchdog and server).
      detached: true,
      stdio: ["ignore", log.fd, log.fd],
      env: { ...process.env, WATCH_PID: String(process.pid) },
    });
    // The child holds its own copy of the descriptor.
    child.once("spawn", () => void log.close());
    child.once("error", () => void log.close());
    return child;
  });
}

export async function stopProcess(child: ChildProcess | undefined, graceMs = 10_000): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  }, graceMs);
  await exited;
  clearTimeout(timer);
}

export async function tail(file: string, lines = 30): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.split("\n").slice(-lines).join("\n");
}

/** Polls `url` until it answers 200, the process exits, or the deadline passes. */
async function waitReady(url: string, headers: Record<string, string>, ca: string, child: ChildProcess, deadline: number): Promise<void> {
  const https = await import("node:https");
  let last = "";
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`process exited (${child.exitCode ?? child.signalCode}) before ready`);
    const status = await new Promise<number>((resolve) => {
      const req = https.get(url, { headers, ca, timeout: 5_000 }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", (err) => {
        last = err.message;
        resolve(0);
      });
      req.on("timeout", () => req.destroy(new Error("timeout")));
    });
    if (status === 200) return;
    if (status !== 0) last = `HTTP ${status}`;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`not ready before deadline (${last})`);
}

async function waitEtcd(url: string, child: ChildProcess, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`etcd exited (${child.exitCode ?? child.signalCode})`);
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("etcd not healthy before deadline");
}

/**
 * Starts etcd and kube-apiserver on loopback and waits until the API server
 * is ready (RBAC bootstrap roles included). Retries once with fresh ports if
 * a port was taken in between.
 */
export function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  return retryOnPortTaken(() => startOnce(opts), 2);
}

async function startOnce(opts: ControlPlaneOptions): Promise<ControlPlane> {
  const bin = binDirOf(opts);
  const etcdBin = path.join(bin, "etcd");
  const apiBin = path.join(bin, "kube-apiserver");
  for (const b of [etcdBin, apiBin]) {
    if (!existsSync(b)) throw new Error(`${b} is missing: run bash hack/install-tools.sh`);
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "interlace-cp-"));
  const deadline = Date.now() + (opts.startTimeoutMs ?? 120_000);
  let etcd: ChildProcess | undefined;
  let api: ChildProcess | undefined;
  let kcm: ChildProcess | undefined;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await stopProcess(kcm);
    await stopProcess(api);
    await stopProcess(etcd);
    if (opts.keepDir !== true) await rm(dir, { recursive: true, force: true });
  };
  try {
    const address = opts.address ?? "127.0.0.1";
    await generateCertificates(dir, address);
    if (opts.runPods === true) await generateClientCert(dir, "apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters");
    const adminToken = randomBytes(24).toString("hex");
    await writeFile(path.join(dir, "tokens.csv"), `${adminToken},admin,admin-uid,"system:masters"\n`, { mode: 0o600 });

    const [clientPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    await mkdir(path.join(dir, "etcd"), { mode: 0o700 });
    etcd = await startProcess(
      etcdBin,
      [
        "--name=default",
        `--data-dir=${path.join(dir, "etcd")}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        "--unsafe-no-fsync", // test data: durability is not needed, speed is
        "--log-level=warn",
      ],
      path.join(dir, "etcd.log"),
    );
    await waitEtcd(etcdUrl, etcd, deadline).catch(async (err: Error) => {
      throw new Error(`etcd failed to start: ${err.message}\n${await tail(path.join(dir, "etcd.log"))}`);
    });

    const server = `https://${address}:${apiPort}`;
    api = await startProcess(
      apiBin,
      [
        `--etcd-servers=${etcdUrl}`,
        `--bind-address=${address}`,
        `--advertise-address=${address}`,
        `--secure-port=${apiPort}`,
        `--cert-dir=${dir}`,
        `--tls-cert-file=${path.join(dir, "apiserver.crt")}`,
        `--tls-private-key-file=${path.join(dir, "apiserver.key")}`,
        `--client-ca-file=${path.join(dir, "ca.crt")}`,
        `--token-auth-file=${path.join(dir, "tokens.csv")}`,
        "--authorization-mode=RBAC",
        `--service-account-key-file=${path.join(dir, "sa.pub")}`,
        `--service-account-signing-key-file=${path.join(dir, "sa.key")}`,
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--api-audiences=https://kubernetes.default.svc.cluster.local",
        "--service-cluster-ip-range=10.96.0.0/16",
        "--allow-privileged=true",
        ...(opts.runPods === true
          ? [
              `--kubelet-client-certificate=${path.join(dir, "apiserver-kubelet-client.crt")}`,
              `--kubelet-client-key=${path.join(dir, "apiserver-kubelet-client.key")}`,
              "--kubelet-preferred-address-types=InternalIP",
            ]
          : // Pods never run here; the ServiceAccount admission plugin would only add token volumes.
            ["--disable-admission-plugins=ServiceAccount"]),
        "--profiling=false",
        "--v=0",
        ...(opts.apiServerArgs ?? []),
      ],
      path.join(dir, "kube-apiserver.log"),
    );
    const ca = await readFile(path.join(dir, "ca.crt"), "utf8");
    await waitReady(`${server}/readyz`, { authorization: `Bearer ${adminToken}` }, ca, api, deadline).catch(async (err: Error) => {
      throw new Error(`kube-apiserver failed to start: ${err.message}\n${await tail(path.join(dir, "kube-apiserver.log"))}`);
    });

    const kubeconfigPath = path.join(dir, "admin.kubeconfig");
    await writeFile(kubeconfigPath, renderKubeconfig(server, ca, "admin", adminToken), { mode: 0o600 });
    const controllers = opts.controllers ?? (opts.garbageCollector === true ? ["garbagecollector"] : []);
    if (controllers.length > 0) {
      const kcmBin = path.join(bin, "kube-controller-manager");
      if (!existsSync(kcmBin)) throw new Error(`${kcmBin} is missing: run bash hack/tools/35-kube-controller-manager.sh`);
      kcm = await startProcess(
        kcmBin,
        [
          `--kubeconfig=${kubeconfigPath}`,
          `--controllers=${controllers.join(",")}`,
          `--root-ca-file=${path.join(dir, "ca.crt")}`,
          "--leader-elect=false",
          "--use-service-account-credentials=false",
          "--secure-port=0",
          "--v=0",
        ],
        path.join(dir, "kube-controller-manager.log"),
      );
    }
    const kubeConfig: KubeAccess = { server, ca: Buffer.from(ca), token: adminToken };

    const tokenFor = async (namespace: string, name: string, expirationSeconds = 3600): Promise<string> => {
      await createIfMissing(kubeConfig, "/api/v1/namespaces", { metadata: { name: namespace } });
      await createIfMissing(kubeConfig, `/api/v1/namespaces/${namespace}/serviceaccounts`, { metadata: { name } });
      const res = await kubeRequest(kubeConfig, "POST", `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { audiences: ["https://kubernetes.default.svc.cluster.local"], expirationSeconds } },
      });
      const token = (res.body as { status?: { token?: string } }).status?.token;
      if (res.status !== 201 || token === undefined) throw new Error(`TokenRequest for ${namespace}/${name} failed: HTTP ${res.status} ${JSON.stringify(res.body)}`);
      return token;
    };
    const kubeConfigFor = async (namespace: string, name: string): Promise<KubeAccess> => ({ server, ca: Buffer.from(ca), token: await tokenFor(namespace, name) });
    const kubeconfigPathFor = async (namespace: string, name: string): Promise<string> => {
      const file = path.join(dir, `sa-${namespace}-${name}.kubeconfig`);
      await writeFile(file, renderKubeconfig(server, ca, `system:serviceaccount:${namespace}:${name}`, await tokenFor(namespace, name)), { mode: 0o600 });
      return file;
    };
    return { server, kubeconfigPath, kubeConfig, dir, tokenFor, kubeConfigFor, kubeconfigPathFor, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A raw API response: status code and the parsed JSON body (or the text when not JSON). */
export interface KubeResponse {
  status: number;
  body: unknown;
}

/** Options of {@link kubeRequest}. */
export interface KubeRequestOptions {
  body?: unknown;
  /** Default `application/json`; `application/apply-patch+yaml` for server-side apply. */
  contentType?: string;
  /** Default `application/json`; ask for `application/json;as=Table;v=v1;g=meta.k8s.io` to get printer columns. */
  accept?: string;
  query?: Record<string, string>;
}

/**
 * One request to the API server as the given user, without the typed
 * client: tests need exact status codes, error messages, dry runs, tables and
 * apply patches. Never throws on an HTTP error status.
 */
export async function kubeRequest(kc: KubeAccess, method: string, apiPath: string, opts: KubeRequestOptions = {}): Promise<KubeResponse> {
  const https = await import("node:https");
  const url = new URL(apiPath, kc.server);
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { accept: opts.accept ?? "application/json", authorization: `Bearer ${kc.token}` };
  const payload = opts.body === undefined ? undefined : typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
  if (payload !== undefined) headers["content-type"] = opts.contentType ?? "application/json";
  const reqOpts: import("node:https").RequestOptions = { method, headers, ca: kc.ca };
  return new Promise((resolve, reject) => {
    const req = https.request(url, reqOpts, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: keep the text
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on("error", reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** A manifest as rendered by helm or read from samples/. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}

/** REST coordinates of a kind, found through discovery. */
interface Discovered {
  plural: string;
  namespaced: boolean;
}

const discoveryCache = new WeakMap<KubeAccess, Map<string, Discovered>>();

/** Finds the plural and scope of `apiVersion`/`kind` through the discovery API (cached per credentials object). */
export async function discover(kc: KubeAccess, apiVersion: string, kind: string): Promise<Discovered> {
  let cache = discoveryCache.get(kc);
  if (cache === undefined) discoveryCache.set(kc, (cache = new Map()));
  const key = `${apiVersion}/${kind}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const res = await kubeRequest(kc, "GET", base);
  if (res.status !== 200) throw new Error(`discovery of ${apiVersion} failed: HTTP ${res.status}`);
  for (const r of (res.body as { resources: { name: string; kind: string; namespaced: boolean }[] }).resources) {
    if (!r.name.includes("/")) cache.set(`${apiVersion}/${r.kind}`, { plural: r.name, namespaced: r.namespaced });
  }
  const found = cache.get(key);
  if (found === undefined) throw new Error(`${kind} is not served under ${apiVersion}`);
  return found;
}

/** The API path of a manifest's object (namespace defaulted to `defaultNamespace` for namespaced kinds). */
export async function pathOf(kc: KubeAccess, m: Manifest, defaultNamespace = "default"): Promise<string> {
  const d = await discover(kc, m.apiVersion, m.kind);
  const base = m.apiVersion.includes("/") ? `/apis/${m.apiVersion}` : `/api/${m.apiVersion}`;
  const ns = d.namespaced ? `/namespaces/${encodeURIComponent(m.metadata.namespace ?? defaultNamespace)}` : "";
  return `${base}${ns}/${d.plural}/${encodeURIComponent(m.metadata.name)}`;
}

/**
 * Server-side applies one manifest (kubectl apply --server-side) and returns
 * the response; throws on an error status unless `allowError`.
 */
export async function applyManifest(
  kc: KubeAccess,
  m: Manifest,
  opts: { fieldManager?: string; namespace?: string; dryRun?: boolean; allowError?: boolean } = {},
): Promise<KubeResponse> {
  const query: Record<string, string> = { fieldManager: opts.fieldManager ?? "interlace-test", force: "true", fieldValidation: "Strict" };
  if (opts.dryRun === true) query["dryRun"] = "All";
  const res = await kubeRequest(kc, "PATCH", await pathOf(kc, m, opts.namespace), { body: m, contentType: "application/apply-patch+yaml", query });
  if (res.status >= 300 && opts.allowError !== true) {
    throw new Error(`apply ${m.kind} ${m.metadata.name} failed: HTTP ${res.status} ${JSON.stringify((res.body as { message?: string }).message ?? res.body)}`);
  }
  return res;
}

/**
 * Installs every CustomResourceDefinition in the YAML files of `dir` (default
 * the generated `crds/`) with server-side apply and waits until each is
 * Established. Returns the CRD names.
 */
export async function installCrds(kc: KubeAccess, dir = path.join(ROOT, "crds"), timeoutMs = 60_000): Promise<string[]> {
  const { parseAllDocuments } = await import("yaml");
  const { readdir } = await import("node:fs/promises");
  const names: string[] = [];
  for (const file of (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    for (const doc of parseAllDocuments(await readFile(path.join(dir, file), "utf8"))) {
      const crd = doc.toJS() as { kind?: string; metadata?: { name?: string } } | null;
      if (crd?.kind !== "CustomResourceDefinition" || crd.metadata?.name === undefined) continue;
      const name = crd.metadata.name;
      const res = await kubeRequest(kc, "PATCH", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`, {
        body: crd,
        contentType: "application/apply-patch+yaml",
        query: { fieldManager: "interlace-test", force: "true" },
      });
      if (res.status >= 300) throw new Error(`installing CRD ${name} failed: HTTP ${res.status} ${JSON.stringify(res.body)}`);
      names.push(name);
    }
  }
  for (const name of names) await waitCrdServing(kc, name, timeoutMs);
  return names;
}

/**
 * Waits until a CRD is Established and its resources can be listed: right
 * after a CRD is created or changed, the API server answers lists with 429
 * "storage is (re)initializing" until its watch cache is ready.
 */
export async function waitCrdServing(kc: KubeAccess, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    const res = await kubeRequest(kc, "GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
    const crd = res.body as {
      spec?: { group: string; names: { plural: string }; versions: { name: string; served: boolean }[] };
      status?: { conditions?: { type: string; status: string }[] };
    };
    const established = (crd.status?.conditions ?? []).some((c) => c.type === "Established" && c.status === "True");
    const version = crd.spec?.versions.find((v) => v.served)?.name;
    if (established && crd.spec !== undefined && version !== undefined) {
      const list = await kubeRequest(kc, "GET", `/apis/${crd.spec.group}/${version}/${crd.spec.names.plural}`, { query: { limit: "1" } });
      if (list.status === 200) return;
      last = `list answered HTTP ${list.status}`;
    } else {
      last = `conditions ${JSON.stringify(crd.status?.conditions ?? [])}`;
    }
    if (Date.now() > deadline) throw new Error(`CRD ${name} not serving: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** POSTs `body` to `collection`; 409 AlreadyExists counts as success. */
async function createIfMissing(kc: KubeAccess, collection: string, body: unknown): Promise<void> {
  const res = await kubeRequest(kc, "POST", collection, { body });
  if (res.status !== 201 && res.status !== 409) throw new Error(`POST ${collection} failed: HTTP ${res.status} ${JSON.stringify(res.body)}`);
}

async function main(): Promise<void> {
  const started = Date.now();
  const cp = await startControlPlane({ keepDir: process.argv.includes("--keep") });
  process.stdout.write(`control plane ready in ${((Date.now() - started) / 1000).toFixed(1)}s\nexport KUBECONFIG=${cp.kubeconfigPath}\n(Ctrl-C stops it)\n`);
  const shutdown = (): void => void cp.stop().then(() => process.exit(0));
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
