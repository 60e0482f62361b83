/**
 * @module Interlace on a real single-node cluster (hack/cluster.ts): kubelet,
 * containerd, kube-proxy and CoreDNS run the pods; the chart is installed
 * with `helm install` and the local images (hack/images.sh); the samples get
 * their model from a server inside the cluster. Asserts real pod readiness,
 * a session through the AgentApp's endpoint that runs tools on the tool
 * runner pods, a scaled EnginePool's new engine in placement, and that pool
 * exposed as an InferencePool behind an Envoy pod (the operator's endpoint
 * picker choosing the engine) serving a session end to end, and an engine pod
 * deleted mid-session: drained (its session finishes) or lost (the session
 * ends with a reason). A pod that crash-loops fails the test with its log.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import t from "tap";
import { startCluster, type Cluster } from "../../hack/cluster.js";
import { APP_NS, RELEASE_NS, applyGateway, applySamples, authHeader, routerApiKey, failOnBrokenPods, helmInstall, listPods, routerUrl, waitReady } from "../../hack/cluster-interlace.js";
import { kubeRequest } from "../../hack/control-plane.js";
import { readEventStream } from "../../common/src/session-client.js";
import { networkPolicySteps } from "./steps-netpol.js";
import { routerReplicaSteps } from "./steps-routers.js";
import { autoscalingSteps } from "./steps-autoscaling.js";
import { appKeySteps } from "./steps-appkeys.js";
import { natsNodeLossSteps } from "./steps-nats-node.js";
import { tenancySteps } from "./steps-tenancy.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const execFileP = promisify(execFile);

t.setTimeout(1_800_000);

/**
 * The groups of steps after the install, the samples and the first session
 * (which always run), in the order they run. `INTERLACE_CLUSTER_STEPS` (a
 * comma-separated list of them) runs only those, to iterate on one without
 * the others; unset, every one runs. `pools` is the EnginePool scaled to 2
 * and exposed as an InferencePool, the router replicas, app keys, the gateway
 * and the pod kills (which need the second engine).
 */
const STEP_GROUPS = ["pools", "failover", "autoscaling", "netpol", "tenancy", "nats-node"] as const;
const only = process.env["INTERLACE_CLUSTER_STEPS"]?.split(",").map((s) => s.trim()).filter((s) => s !== "");
for (const s of only ?? []) if (!(STEP_GROUPS as readonly string[]).includes(s)) throw new Error(`INTERLACE_CLUSTER_STEPS: no step group "${s}" (${STEP_GROUPS.join(", ")})`);
const runs = (group: (typeof STEP_GROUPS)[number]): boolean => only === undefined || only.includes(group);

/** The client API key's header (the chart makes one by default), set once the release is installed. */
let auth: Record<string, string> = {};

/** Opens a session at the app's endpoint with a scripted tool-calling policy and reads its event stream to the end. */
async function sessionWithTools(router: string, app: string): Promise<{ engine: string; events: string }> {
  const res = await fetch(`${router}/v1/apps/${APP_NS}/${app}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth },
    body: JSON.stringify({
      prompt: "Echo a word, wait a little, then say done.",
      policy: {
        type: "lpt-dag",
        calls: [
          { id: "e1", tool: "echo", arguments: { text: "from-the-runner-pod" } },
          { id: "s1", tool: "sleep", arguments: { ms: 300 } },
        ],
        finalText: " done",
      },
    }),
  });
  if (res.status !== 201) throw new Error(`POST sessions: ${res.status} ${await res.text()}`);
  const opened = (await res.json()) as { id: string; engine: string; eventsUrl: string };
  const events = await (await fetch(`${router}${opened.eventsUrl}`, { headers: auth, signal: AbortSignal.timeout(120_000) })).text();
  return { engine: opened.engine, events };
}

/** Opens a session at the app's endpoint with a scripted policy; its events as they arrive. */
async function openSession(router: string, app: string, policy: unknown): Promise<{ engine: string; events: AsyncGenerator<Record<string, unknown>> }> {
  const res = await fetch(`${router}/v1/apps/${APP_NS}/${app}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth },
    body: JSON.stringify({ prompt: "Run the tools.", policy }),
  });
  if (res.status !== 201) throw new Error(`POST sessions: ${res.status} ${await res.text()}`);
  const opened = (await res.json()) as { engine: string; eventsUrl: string };
  const stream = await fetch(`${router}${opened.eventsUrl}`, { headers: auth, signal: AbortSignal.timeout(180_000) });
  if (stream.body === null) throw new Error("no event stream");
  return { engine: opened.engine, events: readEventStream<Record<string, unknown>>(stream.body) };
}

t.test("Interlace on a real single-node cluster", async (t) => {
  const started = Date.now();
  const images = await execFileP("bash", [path.join(ROOT, "hack/images.sh")], { cwd: ROOT, maxBuffer: 16 << 20, timeout: 900_000 });
  t.comment(`images: ${((Date.now() - started) / 1000).toFixed(1)}s\n${images.stderr.trim()}`);

  const cluster: Cluster = await startCluster({ log: (m) => t.comment(m) });
  t.teardown(() => cluster.stop());

  let mark = Date.now();
  const out = await helmInstall(cluster);
  t.match(out, /STATUS: deployed/, "helm install deployed the release");
  await waitReady(cluster, [RELEASE_NS], 420_000);
  t.comment(`chart pods Ready: ${((Date.now() - mark) / 1000).toFixed(1)}s`);
  const system = await listPods(cluster, RELEASE_NS);
  for (const component of ["nats", "operator", "router"]) {
    const pods = system.filter((p) => p.metadata.labels?.["app.kubernetes.io/component"] === component);
    t.ok(pods.length >= 1, `${component} pods exist`);
    for (const p of pods) {
      t.equal(p.status.phase, "Running", `${p.metadata.name} Running`);
      t.ok(p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"), `${p.metadata.name} Ready`);
      t.equal(p.spec.nodeName, cluster.nodeName, `${p.metadata.name} on the node`);
    }
  }

  mark = Date.now();
  const { applied } = await applySamples(cluster);
  t.comment(`applied ${applied.join(", ")}`);
  await waitReady(cluster, [APP_NS, RELEASE_NS], 420_000, { interlace: true });
  t.comment(`samples Ready: ${((Date.now() - mark) / 1000).toFixed(1)}s`);
  // kubectl expands the `interlace` category from the API server's discovery, which can lag the CRDs by a moment
  // (once, a fresh cache listed only the AgentApps though every kind was Ready through the API): asked again, with
  // discovery read afresh each time, until all three kinds show, for up to 30 s.
  const names = ["qwen-small", "basic-tools", "assistant"];
  let table = "";
  for (const until = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 1000))) {
    table = await cluster.kubectl(["get", "interlace", "-n", APP_NS, "--cache-dir", path.join(cluster.dir, `kube-cache-${Date.now()}`)]);
    if (Date.now() > until || names.every((name) => new RegExp(`^\\S*${name}\\s`, "m").test(table))) break;
  }
  t.comment(table);
  for (const name of names) t.match(table, new RegExp(`^\\S*${name}\\s+True\\s`, "m"), `kubectl get interlace: ${name} Ready True`);
  const appPods = await listPods(cluster, APP_NS);
  for (const component of ["engine", "toolrunner"]) {
    const pods = appPods.filter((p) => p.metadata.labels?.["app.kubernetes.io/component"] === component);
    t.ok(pods.length >= 1, `${component} pods exist`);
    for (const p of pods) t.ok(p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"), `${p.metadata.name} Ready`);
  }

  // A session through the AgentApp's endpoint: router -> engine pod -> NATS -> tool runner pods -> interrupts.
  const router = await routerUrl(cluster);
  const key = await routerApiKey(cluster);
  t.ok(key, "the chart made a client API key (router.apiKeys.generate, on by default)");
  const refused = await fetch(`${router}/v1/apps/${APP_NS}/assistant/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  t.equal(refused.status, 401, "the router refuses a request without a key");
  auth = authHeader(key);
  const s = await sessionWithTools(router, "assistant");
  t.match(s.events, /event: done\n(?:id: \d+\n)?data: \{[^\n]*"reason":"eos"/, "the session finished", { events: s.events.slice(-2000) });
  t.match(s.events, /event: interrupt\n(?:id: \d+\n)?data: \{[^\n]*"id":"e1"[^\n]*from-the-runner-pod/, "the echo result came back as an interrupt");
  t.match(s.events, /event: interrupt\n(?:id: \d+\n)?data: \{[^\n]*"id":"s1"/, "the sleep result came back as an interrupt");

  if (runs("pools")) {
    // Scale the EnginePool 1 -> 2 and expose it as an InferencePool: the new engine pod becomes
    // Ready and joins placement; the operator runs the pool's endpoint picker.
    const poolPath = `/apis/interlace.dev/v1alpha1/namespaces/${APP_NS}/enginepools/qwen-small`;
    const patched = await kubeRequest(cluster.cp.kubeConfig, "PATCH", poolPath, { body: { spec: { replicas: 2, inferencePool: {} } }, contentType: "application/merge-patch+json" });
    t.equal(patched.status, 200, "EnginePool scaled to 2 and exposed as an InferencePool");
    await waitReady(cluster, [APP_NS], 300_000, { interlace: true });
    const deadline = Date.now() + 60_000;
    let engines = { ready: 0, total: 0 };
    while (Date.now() < deadline) {
      engines = ((await (await fetch(`${router}/v1/apps/${APP_NS}/assistant`, { headers: auth })).json()) as { engines: typeof engines }).engines;
      if (engines.ready === 2) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    t.equal(engines.ready, 2, "both engines are in the router's placement");
    await routerReplicaSteps(cluster, t, auth, "reports");
    mark = Date.now();
    await t.test("API keys per app: no key 401, another app's key 403, the app's key 200, a rotated key's old value within its grace", (t) => appKeySteps(t, cluster, router, auth, "qwen-small"));
    t.comment(`app keys: ${((Date.now() - mark) / 1000).toFixed(1)}s`);

    // An Envoy pod as the gateway in front of the InferencePool, its endpoint picker deployed by the operator.
    mark = Date.now();
    {
      const pickers = await listPods(cluster, APP_NS, "app.kubernetes.io/component=endpoint-picker");
      t.ok(pickers.length === 1 && pickers[0]!.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"), "the operator runs the pool's endpoint picker, Ready");
      const gateway = await applyGateway(cluster, "qwen-small");
      await waitReady(cluster, [APP_NS], 180_000);
      // The Deployment just made may not show its pod yet, and kube-proxy programs the Service a moment
      // after its endpoint turns ready (till then the node answers "no route to host"): wait for an answer.
      const reachBy = Date.now() + 180_000;
      for (;;) {
        const answered = await fetch(`${gateway}/`, { signal: AbortSignal.timeout(5000) }).then(() => true, () => false);
        if (answered) break;
        if (Date.now() > reachBy) throw new Error(`the gateway Service ${gateway} did not answer in 180 s`);
        await new Promise((r) => setTimeout(r, 1000));
      }
      const viaGateway = async (prompt: string): Promise<{ id: string; engine: string; reason: string; events: string }> => {
        const res = await fetch(`${gateway}/v1/apps/${APP_NS}/assistant/sessions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt, policy: { type: "lpt-dag", calls: [{ id: "e1", tool: "echo", arguments: { text: "through-the-gateway" } }], finalText: " done" } }),
        });
        if (res.status !== 201) throw new Error(`POST sessions through the gateway: ${res.status} ${await res.text()}`);
        const opened = (await res.json()) as { id: string; engine: string; eventsUrl: string; placement: { reason: string } };
        const events = await (await fetch(`${gateway}${opened.eventsUrl}`, { signal: AbortSignal.timeout(120_000) })).text();
        return { id: opened.id, engine: opened.engine, reason: opened.placement.reason, events };
      };
      const first = await viaGateway("Through the gateway, please.");
      t.match(first.events, /event: interrupt\n(?:id: \d+\n)?data: \{[^\n]*through-the-gateway/, "the tool result came back through the gateway's event stream");
      t.match(first.events, /event: done\n(?:id: \d+\n)?data: \{[^\n]*"reason":"eos"/, "the session finished through the gateway", { events: first.events.slice(-2000) });
      t.match(first.id, new RegExp(`^${first.engine}\\.`), "a routed session id naming its engine pod");
      await new Promise((r) => setTimeout(r, 3000));
      const second = await viaGateway("And again through the gateway.");
      t.equal(second.engine, first.engine, `the same prefix goes to the same engine (${second.reason})`);
      t.comment(`gateway sessions: ${first.engine} (${first.reason}), ${second.engine} (${second.reason})`);
    }
    t.comment(`gateway: ${((Date.now() - mark) / 1000).toFixed(1)}s`);

    // A tool runner killed mid-call: JetStream redelivers the call to a runner and it completes once.
    mark = Date.now();
    {
      const opened = await openSession(router, "assistant", { type: "lpt-dag", calls: [{ id: "slow", tool: "sleep", arguments: { ms: 4000 } }], finalText: " done" });
      const seen: Record<string, unknown>[] = [];
      let killed: string[] = [];
      for await (const e of opened.events) {
        seen.push(e);
        if (e["type"] === "call" && killed.length === 0) {
          // Hard kill (no grace): whichever runner holds the call dies with it.
          const runners = await listPods(cluster, APP_NS, "app.kubernetes.io/component=toolrunner");
          killed = runners.map((p) => p.metadata.name);
          await cluster.kubectl(["delete", "pod", "-n", APP_NS, "--grace-period=0", "--force", "--wait=false", ...killed]);
        }
      }
      const results = seen.filter((e) => e["type"] === "interrupt" && e["id"] === "slow");
      t.ok(killed.length > 0, `killed the tool runner pods mid-call (${killed.join(", ")})`);
      t.equal(results.length, 1, "the call's result arrived exactly once", { events: seen.map((e) => e["type"]) });
      t.equal(seen.at(-1)?.["type"], "done", "the session finished");
      await waitReady(cluster, [APP_NS], 300_000);
      const now = (await listPods(cluster, APP_NS, "app.kubernetes.io/component=toolrunner")).map((p) => p.metadata.name);
      t.notOk(now.some((n) => killed.includes(n)), "the Deployment replaced the killed runners");
    }
    t.comment(`tool runner kill: ${((Date.now() - mark) / 1000).toFixed(1)}s`);

    // An engine pod deleted (a scale-down): it drains, so its live session finishes there, and the Deployment replaces the pod.
    mark = Date.now();
    {
      const opened = await openSession(router, "assistant", { type: "lpt-dag", calls: [{ id: "long", tool: "sleep", arguments: { ms: 8000 } }], finalText: " done" });
      const seen: Record<string, unknown>[] = [];
      for await (const e of opened.events) {
        seen.push(e);
        if (e["type"] === "call") await cluster.kubectl(["delete", "pod", "-n", APP_NS, "--wait=false", opened.engine]);
      }
      const last = seen.at(-1) ?? {};
      t.same({ type: last["type"], reason: last["reason"] }, { type: "done", reason: "eos" }, `the draining engine finished its session (${JSON.stringify(last).slice(0, 300)})`);
      t.equal(seen.filter((e) => e["type"] === "interrupt" && e["id"] === "long").length, 1, "with its call's result");
      await waitReady(cluster, [APP_NS], 300_000, { interlace: true });
      const engines = (await listPods(cluster, APP_NS, "app.kubernetes.io/component=engine")).map((p) => p.metadata.name);
      t.notOk(engines.includes(opened.engine), "the drained engine pod is gone");
      t.equal(engines.length, 2, "the Deployment replaced it");
    }
    t.comment(`engine pod drain: ${((Date.now() - mark) / 1000).toFixed(1)}s`);

    // An engine pod lost (no grace): its session ends at the client with a reason, and the Deployment replaces the pod.
    mark = Date.now();
    {
      const opened = await openSession(router, "assistant", { type: "lpt-dag", calls: [{ id: "long", tool: "sleep", arguments: { ms: 20000 } }], finalText: " done" });
      const seen: Record<string, unknown>[] = [];
      for await (const e of opened.events) {
        seen.push(e);
        if (e["type"] === "call") await cluster.kubectl(["delete", "pod", "-n", APP_NS, "--grace-period=0", "--force", "--wait=false", opened.engine]);
      }
      const last = seen.at(-1) ?? {};
      const reason = String(last["code"] ?? last["reason"] ?? "");
      t.ok(last["type"] !== "done" || last["reason"] !== "eos", `the session did not pretend to finish (${JSON.stringify(last).slice(0, 300)})`);
      t.match(reason, /engine_lost|cancelled|error|draining/, "the client got a reason");
      await waitReady(cluster, [APP_NS], 300_000, { interlace: true });
      const engines = (await listPods(cluster, APP_NS, "app.kubernetes.io/component=engine")).map((p) => p.metadata.name);
      t.notOk(engines.includes(opened.engine), "the deleted engine pod is gone");
      t.equal(engines.length, 2, "the Deployment replaced it");
    }
    t.comment(`engine pod deletion: ${((Date.now() - mark) / 1000).toFixed(1)}s`);

  }

  if (runs("failover")) {
    // The operator leader deleted: the standby takes the Lease.
    mark = Date.now();
    {
      // The operator pods are listed at each look: the Deployment's replacement for the deleted leader may win the Lease before the standby does, and that is a failover too.
      const holder = async (): Promise<string | undefined> => {
        const operators = (await listPods(cluster, RELEASE_NS, "app.kubernetes.io/component=operator")).map((p) => p.metadata.name);
        const leases = (await kubeRequest(cluster.cp.kubeConfig, "GET", `/apis/coordination.k8s.io/v1/namespaces/${RELEASE_NS}/leases`)).body as { items?: { spec?: { holderIdentity?: string } }[] };
        return (leases.items ?? []).map((l) => l.spec?.holderIdentity).find((h) => h !== undefined && operators.includes(h));
      };
      const leader = await holder();
      t.ok(leader, `an operator pod holds the Lease (${leader})`);
      await cluster.kubectl(["delete", "pod", "-n", RELEASE_NS, "--grace-period=0", "--force", "--wait=false", leader ?? ""]);
      let next: string | undefined;
      const until = Date.now() + 90_000;
      while (Date.now() < until) {
        next = await holder();
        if (next !== undefined && next !== leader) break;
        await new Promise((r) => setTimeout(r, 1000));
      }
      t.ok(next !== undefined && next !== leader, `another operator pod (${next}) took over`);
    }
    t.comment(`operator failover: ${((Date.now() - mark) / 1000).toFixed(1)}s`);

  }

  if (runs("autoscaling")) await autoscalingSteps(t, cluster, { router, auth, enginePool: "qwen-small" });

  if (runs("netpol")) {
    mark = Date.now();
    await t.test("NetworkPolicies hold: a pod in another namespace reaches no engine, runner or NATS port", (t) => networkPolicySteps(t, cluster));
    t.comment(`network policies: ${((Date.now() - mark) / 1000).toFixed(1)}s`);
  }

  // After the chart's policies' own step: this one turns the operator's per-pool policies on (a helm upgrade), which the
  // operator keeps in place, so deleting policies to show they are what stops the intruder would no longer work there.
  if (runs("tenancy")) {
    mark = Date.now();
    await t.test("two tenants on the real cluster: the attack table with the identities, keys and policies the operator deploys", (t) => tenancySteps(t, cluster, { router, auth, app: "assistant" }));
    t.comment(`tenancy: ${((Date.now() - mark) / 1000).toFixed(1)}s`);
  }

  // Last: a NATS node lost under load (the other steps run on a whole cluster).
  if (runs("nats-node")) {
    mark = Date.now();
    await t.test("one NATS node killed under load: calls and placement go on, nothing lost or duplicated", (t) => natsNodeLossSteps(t, cluster, { router, auth, app: "assistant" }));
    t.comment(`NATS node loss: ${((Date.now() - mark) / 1000).toFixed(1)}s`);
  }

  await failOnBrokenPods(cluster, APP_NS);
  await failOnBrokenPods(cluster, RELEASE_NS);
  t.comment(`cluster timings: ${JSON.stringify(cluster.timings)}; whole test ${((Date.now() - started) / 1000).toFixed(1)}s`);
});
