/**
 * @module `npm run test:e2e`: the whole operator path on a real control
 * plane. Builds/installs etcd, kube-apiserver and helm if missing, starts
 * them, installs the chart's CRDs and RBAC (rendered by the real helm),
 * applies samples/, runs the operator as a child process under the chart's
 * ServiceAccount, marks the Deployments it creates available through the
 * status subresource (no kubelet runs), and plays the pods that matter for
 * serving: a nats-server, two router replicas (as the chart's router
 * Deployment runs them: `replicas: 2`) and an engine process for each sample
 * EnginePool an AgentApp uses (the generated `test` model: nothing is
 * downloaded). It prints `kubectl get interlace` once every resource is
 * Ready, then opens a session at the AgentApp's endpoint path through one
 * router replica and follows its events to `done` through the other (and a
 * sample program the other way round). Exits non-zero if anything fails.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { InterlaceKinds } from "../operator/src/api/index.js";
import { applyManifest, freePort, installCrds, kubeRequest, startControlPlane, type ControlPlane, type Manifest } from "./control-plane.js";
import { spawnEngine, type EngineProcess } from "./engine-process.js";
import { NatsServer } from "./nats.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BIN = process.env["INTERLACE_BIN"] ?? path.join(ROOT, ".cache/bin");
const RELEASE_NS = "interlace-system";
const APP_NS = "default";
const READY_TIMEOUT_MS = Number(process.env["E2E_READY_TIMEOUT_MS"] ?? 180_000);
const execFileP = promisify(execFile);

function say(msg: string): void {
  process.stdout.write(`[e2e] ${msg}\n`);
}

function yamlDocs(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null && typeof m === "object" && "kind" in m);
}

async function ensureTools(): Promise<void> {
  for (const tool of ["20-etcd.sh", "30-kube-apiserver.sh", "40-helm.sh"]) {
    execFileSync("bash", [path.join(ROOT, "hack/tools", tool)], { stdio: "inherit" });
  }
}

/** Every Deployment in `namespace` reported available with all replicas, as a kubelet + controller-manager would. */
async function markDeploymentsAvailable(cp: ControlPlane, namespace: string): Promise<number> {
  const kc = cp.kubeConfig;
  const list = await kubeRequest(kc, "GET", `/apis/apps/v1/namespaces/${namespace}/deployments`);
  let marked = 0;
  for (const d of (list.body as { items?: any[] }).items ?? []) {
    const want = d.spec.replicas ?? 1;
    const gen = d.metadata.generation;
    if (d.status?.observedGeneration === gen && d.status?.availableReplicas === want && d.status?.readyReplicas === want) continue;
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const status = {
      observedGeneration: gen,
      replicas: want,
      updatedReplicas: want,
      readyReplicas: want,
      availableReplicas: want,
      conditions: [
        { type: "Available", status: "True", reason: "MinimumReplicasAvailable", message: "simulated by hack/e2e.ts", lastUpdateTime: now, lastTransitionTime: now },
        { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable", message: "simulated by hack/e2e.ts", lastUpdateTime: now, lastTransitionTime: now },
      ],
    };
    const res = await kubeRequest(kc, "PATCH", `/apis/apps/v1/namespaces/${namespace}/deployments/${d.metadata.name}/status`, {
      body: { status },
      contentType: "application/merge-patch+json",
    });
    if (res.status < 300) marked++;
  }
  return marked;
}

/** Names of Interlace objects in `namespace` whose Ready condition is not True. */
async function notReady(cp: ControlPlane, namespace: string): Promise<string[]> {
  const pending: string[] = [];
  for (const def of Object.values(InterlaceKinds)) {
    const res = await kubeRequest(cp.kubeConfig, "GET", `/apis/${def.group}/${def.version}/namespaces/${namespace}/${def.plural}`);
    for (const o of (res.body as { items?: any[] }).items ?? []) {
      const ready = (o.status?.conditions ?? []).find((c: any) => c.type === "Ready");
      const current = o.status?.observedGeneration === o.metadata.generation;
      if (ready?.status !== "True" || !current) pending.push(`${def.kind}/${o.metadata.name} (${ready?.reason ?? "no status"})`);
    }
  }
  return pending;
}

/** `kubectl get interlace -o wide` when kubectl is on PATH, else the same tables from the API. */
async function showResources(cp: ControlPlane, namespace: string): Promise<void> {
  // E2E_KUBECTL=none forces the API-table fallback (what a machine without kubectl prints).
  const forced = process.env["E2E_KUBECTL"];
  const kubectl = forced === "none" ? undefined : [forced, path.join(BIN, "kubectl"), "/usr/local/bin/kubectl", "/usr/bin/kubectl"].find((p) => p !== undefined && existsSync(p));
  if (kubectl !== undefined) {
    say(`$ kubectl get interlace -n ${namespace}`);
    const { stdout } = await execFileP(kubectl, ["--kubeconfig", cp.kubeconfigPath, "get", "interlace", "-n", namespace]);
    process.stdout.write(stdout);
    return;
  }
  say(forced === "none" ? "E2E_KUBECTL=none; the same tables from the API server:" : "kubectl not found; the same tables from the API server:");
  for (const def of Object.values(InterlaceKinds)) {
    const res = await kubeRequest(cp.kubeConfig, "GET", `/apis/${def.group}/${def.version}/namespaces/${namespace}/${def.plural}`, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    });
    const body = res.body as { columnDefinitions: { name: string; priority: number }[]; rows: { cells: unknown[] }[] };
    const cols = body.columnDefinitions.map((c, i) => ({ ...c, i })).filter((c) => c.priority === 0);
    const rows = [cols.map((c) => c.name.toUpperCase()), ...body.rows.map((r) => cols.map((c) => String(r.cells[c.i] ?? "")))];
    const widths = cols.map((_, j) => Math.max(...rows.map((r) => (r[j] ?? "").length)));
    process.stdout.write(`${def.kind}\n`);
    for (const r of rows) process.stdout.write(`${r.map((cell, j) => cell.padEnd((widths[j] ?? 0) + 3)).join("").trimEnd()}\n`);
    process.stdout.write("\n");
  }
}

/** Opens a session at each AgentApp's endpoint path through router replica 0 and follows it to `done` through replica 1. */
async function sessionThroughRouters(cp: ControlPlane, routerBases: readonly [string, string]): Promise<number> {
  const [routerBase, otherBase] = routerBases;
  const list = (await kubeRequest(cp.kubeConfig, "GET", `/apis/interlace.dev/v1alpha1/namespaces/${APP_NS}/agentapps`)).body as { items: any[] };
  for (const app of list.items) {
    const endpoint = String(app.status?.endpoint ?? "");
    const appPath = new URL(endpoint).pathname;
    const res = await fetch(`${routerBase}${appPath}/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "Say hello.", policy: { type: "text", pieces: ["Hello", " from", " the", " engine."] } }),
    });
    if (res.status !== 201) {
      say(`session at ${endpoint}: ${res.status} ${await res.text()}`);
      return 1;
    }
    const opened = (await res.json()) as { id: string; engine: string; placement: { reason: string } };
    const events = await (await fetch(`${otherBase}${appPath}/sessions/${opened.id}/events`)).text();
    const done = /event: done\n(?:id: \d+\n)?data: (\{.*\})/.exec(events);
    if (done === null) {
      say(`session ${opened.id} did not finish: ${events.slice(-500)}`);
      return 1;
    }
    const reason = (JSON.parse(done[1]!) as { reason: string }).reason;
    say(`session ${opened.id} opened at ${endpoint} (through router replica 0, its events read through replica 1) ran on engine ${opened.engine} (placement: ${opened.placement.reason}) and finished: done ${reason}`);
    if ((await programThroughRouters(otherBase, routerBase, appPath, String(app.metadata.name))) !== 0) return 1;
  }
  return 0;
}

/** The sample program of an AgentApp with semantic functions (samples/programs/<app>.json), submitted through one router replica, its events read to `done` through the other. */
async function programThroughRouters(routerBase: string, otherBase: string, appPath: string, name: string): Promise<number> {
  const file = path.join(ROOT, "samples/programs", `${name}.json`);
  if (!existsSync(file)) return 0;
  const res = await fetch(`${routerBase}${appPath}/programs`, { method: "POST", headers: { "content-type": "application/json" }, body: readFileSync(file, "utf8") });
  if (res.status !== 201) {
    say(`program samples/programs/${name}.json: ${res.status} ${await res.text()}`);
    return 1;
  }
  const created = (await res.json()) as { id: string; eventsUrl: string; calls: { id: string; objective: string }[] };
  const events = await (await fetch(`${otherBase}${created.eventsUrl}`)).text();
  const done = /event: done\nid: \d+\ndata: (\{.*\})/.exec(events);
  const state = done === null ? "unfinished" : (JSON.parse(done[1]!) as { state: string }).state;
  if (state !== "succeeded") {
    say(`program ${created.id} did not succeed (${state}): ${events.slice(-800)}`);
    return 1;
  }
  const produced = events.split("event: value").length - 1;
  say(`program ${created.id} (samples/programs/${name}.json: ${created.calls.map((c) => `${c.id}=${c.objective}`).join(", ")}) ran through replica 1, read through replica 0: ${produced} values produced, done ${state}`);
  return 0;
}

async function main(): Promise<number> {
  const started = Date.now();
  await ensureTools();
  say("starting etcd + kube-apiserver");
  const cp = await startControlPlane();
  let operator: ChildProcess | undefined;
  const routers: ChildProcess[] = [];
  const engines: EngineProcess[] = [];
  let nats: NatsServer | undefined;
  const stopChild = async (child: ChildProcess | undefined): Promise<void> => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill("SIGKILL");
  };
  const stopAll = async (): Promise<void> => {
    await stopChild(operator);
    for (const router of routers) await stopChild(router);
    await Promise.all(engines.map((e) => e.stop()));
    await nats?.stop();
    await cp.stop();
  };
  process.once("SIGINT", () => void stopAll().then(() => process.exit(130)));
  try {
    say(`control plane up (${cp.server}); admin kubeconfig ${cp.kubeconfigPath}`);
    const kc = cp.kubeConfig;
    const crds = await installCrds(kc, path.join(ROOT, "charts/interlace/crds"));
    say(`installed the chart's CRDs: ${crds.join(", ")}`);

    await kubeRequest(kc, "POST", "/api/v1/namespaces", { body: { metadata: { name: RELEASE_NS } } });
    const { stdout } = await execFileP(path.join(BIN, "helm"), ["template", "interlace", path.join(ROOT, "charts/interlace"), "--namespace", RELEASE_NS], {
      maxBuffer: 32 << 20,
    });
    const rbac = yamlDocs(stdout).filter((m) => ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"].includes(m.kind));
    for (const m of rbac) await applyManifest(kc, m, { namespace: RELEASE_NS });
    say(`applied the chart's RBAC: ${rbac.map((m) => `${m.kind}/${m.metadata.name}`).join(", ")}`);

    const samples = readdirSync(path.join(ROOT, "samples"))
      .filter((f) => /\.ya?ml$/.test(f))
      .sort()
      .flatMap((f) => yamlDocs(readFileSync(path.join(ROOT, "samples", f), "utf8")));
    for (const m of samples) await applyManifest(kc, m, { namespace: APP_NS, fieldManager: "kubectl" });
    say(`applied samples/: ${samples.map((m) => `${m.kind}/${m.metadata.name}`).join(", ")}`);

    const main = path.join(ROOT, "operator/src/main.ts");
    if (!existsSync(main)) {
      say("operator/src/main.ts does not exist yet: cannot run the operator");
      return 2;
    }
    nats = await NatsServer.start();
    say(`nats-server (JetStream) on ${nats.url}`);
    // Two replicas, as the chart's router Deployment runs: they share the programs, responses and placement reservations through NATS.
    const routerBases: string[] = [];
    for (const replica of [0, 1]) {
      const routerPort = await freePort();
      routers.push(
        spawn(
          process.execPath,
          [path.join(ROOT, "node_modules/.bin/tsx"), path.join(ROOT, "router/src/main.ts"), `--nats-url=${nats.url}`, `--port=${routerPort}`, "--host=127.0.0.1", `--router-id=interlace-router-${replica}`, "--log-level=warn"],
          { stdio: ["ignore", "inherit", "inherit"], cwd: ROOT },
        ),
      );
      routerBases.push(`http://127.0.0.1:${routerPort}`);
      say(`running router replica ${replica} as the chart's router Deployment does: npm run router -- --nats-url=${nats.url} --port=${routerPort}`);
    }
    // One engine process for each pool a sample AgentApp runs on (samples/ also holds an upstream-backend pool no app uses).
    const appPools = new Set(samples.filter((m) => m.kind === "AgentApp").map((m) => String((m.spec as { enginePool?: { name?: unknown } } | undefined)?.enginePool?.name ?? "")));
    for (const poolName of [...appPools].filter((p) => p !== "").sort()) {
      engines.push(
        await spawnEngine(
          ["--model-preset", "test", "--executor", "nats", "--nats-url", nats.url, "--pool", `${APP_NS}/${poolName}`, "--pod-name", `${poolName}-engine-0`, "--sequences", "2", "--context-size", "8192"],
          { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 120_000 },
        ),
      );
      say(`engine process for EnginePool ${APP_NS}/${poolName} up (generated test model, heartbeating into interlace-engines)`);
    }

    const saKubeconfig = await cp.kubeconfigPathFor(RELEASE_NS, "interlace");
    const port = await freePort();
    const args = [
      path.join(ROOT, "node_modules/.bin/tsx"),
      main,
      `--kubeconfig=${saKubeconfig}`,
      "--leader-elect=true",
      `--lease-namespace=${RELEASE_NS}`,
      `--metrics-port=${port}`,
      "--metrics-host=127.0.0.1",
      "--log-level=warn",
      `--nats-url=${nats.url}`,
      `--router-url=http://interlace-router.${RELEASE_NS}.svc:8080`,
    ];
    say(`running the operator as ServiceAccount ${RELEASE_NS}/interlace: npm run operator -- ${args.slice(2).join(" ")}`);
    operator = spawn(process.execPath, args, { stdio: ["ignore", "inherit", "inherit"], cwd: ROOT });

    const deadline = Date.now() + READY_TIMEOUT_MS;
    let pending: string[] = [];
    let marked = 0;
    while (Date.now() < deadline) {
      if (operator.exitCode !== null) {
        say(`the operator exited with ${operator.exitCode}`);
        break;
      }
      marked += await markDeploymentsAvailable(cp, APP_NS);
      pending = await notReady(cp, APP_NS);
      if (pending.length === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    say(`Deployments marked available through their status subresource: ${marked}`);
    await showResources(cp, APP_NS);
    if (pending.length > 0) {
      say(`NOT READY: ${pending.join(", ")}`);
      return 1;
    }
    say(`all Interlace resources Ready (${((Date.now() - started) / 1000).toFixed(1)}s in total)`);
    return await sessionThroughRouters(cp, [routerBases[0]!, routerBases[1]!]);
  } finally {
    await stopAll();
  }
}

process.exitCode = await main().catch((err: unknown) => {
  process.stderr.write(`[e2e] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 1;
});
