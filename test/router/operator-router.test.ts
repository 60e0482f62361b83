/**
 * The operator and the router together on a real kube-apiserver + etcd and a
 * real nats-server: the AgentApp's rendered config reaches the router through
 * the `interlace-apps` bucket (and a spec change reaches it without a
 * restart); the app is Ready only once a router serves it and its pool has a
 * ready engine (a real engine process heartbeating); `status.activeSessions`
 * follows the sessions open through the router; the endpoint names the router
 * Service; a session opened at the endpoint's path reaches the engine and
 * finishes.
 */
import t from "tap";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { startNatsServer } from "../helpers/nats-server.js";
import { AgentAppKind, EnginePoolKind, ToolPoolKind, type AgentApp, type EnginePool, type ToolPool } from "../../operator/src/api/index.js";
import { APP_CONFIG_KEY, type AppConfig } from "../../operator/src/resources/index.js";
import { CoreTypes } from "../../operator/src/runtime/index.js";
import { startRouter } from "../../router/src/index.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { condition, markDeploymentAvailable, startOperatorStack, waitFor } from "../operator/helpers.js";
import { log, longSession, QUICK } from "./fixtures.js";
import { BUILTIN_TOOLS, spawnRunner } from "../nats/fixtures.js";
import { routerOptions } from "../../router/src/config.js";

t.setTimeout(280_000);
const NS = "apps";

const nats = await startNatsServer(t);
const { cp, admin } = await startOperatorStack(t, NS, ["--metrics-port", "0", "--metrics-host", "127.0.0.1", "--image", "test/interlace:dev", "--nats-url", nats.url, "--router-url", "http://interlace-router.interlace-system.svc:8080"]);

const getApp = (): Promise<AgentApp | null> => admin.get<AgentApp>(AgentAppKind, NS, "helper");

t.test("the operator's rendered config is what the router serves; Ready means served", async (t) => {
  await admin.create<EnginePool>(EnginePoolKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "pool", namespace: NS },
    spec: { model: { path: "/models/m.gguf" }, runtime: { backend: "llama-cpp" } },
  });
  await admin.create<ToolPool>(ToolPoolKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "ToolPool",
    metadata: { name: "tools", namespace: NS },
    spec: { tools: [{ name: "sleep", description: "Waits ms milliseconds.", parameters: { type: "object", properties: { ms: { type: "integer" } }, required: ["ms"] }, builtin: { name: "sleep" } }] },
  });
  await admin.create<AgentApp>(AgentAppKind, {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "AgentApp",
    metadata: { name: "helper", namespace: NS },
    spec: { enginePool: { name: "pool" }, toolPools: [{ name: "tools" }], systemPrompt: "You help.", maxTokens: 64 },
  });
  await waitFor("engine deployment", async () => (await admin.get(CoreTypes.Deployment, NS, "pool-engine")) !== null);
  await markDeploymentAvailable(admin, NS, "pool-engine");
  await waitFor("runner deployment", async () => (await admin.get(CoreTypes.Deployment, NS, "tools-tools")) !== null);
  await markDeploymentAvailable(admin, NS, "tools-tools");
  // What the ToolPool's pods run: a tool runner taking the pool's calls from NATS.
  await spawnRunner(t, nats.url, { namespace: NS, pool: "tools", tools: BUILTIN_TOOLS.filter((x) => x.name === "sleep"), concurrency: 4 }, "runner-0");
  const noRouter = await waitFor("RouterNotServing", async () => {
    const a = await getApp();
    return condition(a, "Ready")?.reason === "RouterNotServing" ? a : undefined;
  });
  t.equal(noRouter.status?.endpoint, "http://interlace-router.interlace-system.svc:8080/v1/apps/apps/helper", "the endpoint names the router Service");

  const router = await startRouter(
    routerOptions({ natsUrl: nats.url, maxBodyBytes: 65_536, upstreamTimeoutMs: 20_000, presenceMs: 500, logLevel: "silent" }),
    log,
  );
  t.teardown(() => router.close());
  const base = `http://127.0.0.1:${router.port}`;
  await waitFor("NoReadyEngine", async () => condition(await getApp(), "Ready")?.reason === "NoReadyEngine");
  const cm = await admin.get<V1ConfigMap>(CoreTypes.ConfigMap, NS, "helper-app-config");
  const rendered = JSON.parse(cm?.data?.[APP_CONFIG_KEY] ?? "{}") as AppConfig;
  t.same(router.apps.get(NS, "helper")?.config, rendered, "the router serves exactly the rendered config");
  const noEngine = await fetch(`${base}/v1/apps/${NS}/helper/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(QUICK) });
  t.equal(noEngine.status, 503, "no engine yet: 503 with the reason");

  const engine = await spawnEngine(
    ["--model-preset", "test", "--sequences", "2", "--context-size", "2048", "--executor", "nats", "--nats-url", nats.url, "--pool", `${NS}/pool`, "--pod-name", "pool-engine-0", "--heartbeat-ms", "250"],
    { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 90_000 },
  );
  t.teardown(() => engine.stop());
  const ready = await waitFor("AgentApp Ready", async () => {
    const a = await getApp();
    return condition(a, "Ready")?.status === "True" ? a : undefined;
  });
  t.match(condition(ready, "Ready"), { reason: "Available" });

  // The endpoint's path, on the router: a session reaches the engine process and finishes.
  const path = new URL(ready.status!.endpoint!).pathname;
  t.equal(path, `/v1/apps/${NS}/helper`);
  const res = await fetch(`${base}${path}/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(QUICK) });
  t.equal(res.status, 201);
  const s = (await res.json()) as { id: string; engine: string };
  t.equal(s.engine, "pool-engine-0");
  const events = await (await fetch(`${base}${path}/sessions/${s.id}/events`)).text();
  t.match(events, /event: done/, "the session finished on the engine");

  // activeSessions follows an open stream.
  const opened = await fetch(`${base}${path}/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(longSession()) });
  t.equal(opened.status, 201, await opened.clone().text());
  const long = (await opened.json()) as { id: string };
  const ac = new AbortController();
  const stream = fetch(`${base}${path}/sessions/${long.id}/events`, { signal: ac.signal }).then((r) => r.text()).catch(() => "");
  await waitFor("activeSessions 1", async () => (await getApp())?.status?.activeSessions === 1, 30_000);
  t.pass("status.activeSessions shows the open session");
  await waitFor("callsInFlight 1", async () => (await admin.get<ToolPool>(ToolPoolKind, NS, "tools"))?.status?.callsInFlight === 1, 30_000);
  t.pass("the ToolPool's callsInFlight shows the running sleep call");
  ac.abort();
  await stream;
  await waitFor("activeSessions 0", async () => (await getApp())?.status?.activeSessions === 0, 30_000);

  // A spec change reaches the router without a restart.
  await admin.mergePatch(AgentAppKind, NS, "helper", { spec: { systemPrompt: "You help, briefly." } });
  await waitFor("router has the new config", () => router.apps.get(NS, "helper")?.config.systemPrompt === "You help, briefly.", 30_000);
  t.pass("the new system prompt reached the router");
});
