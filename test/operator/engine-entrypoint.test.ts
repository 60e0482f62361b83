/**
 * The engine container's arguments, exactly as the operator renders them for
 * every sample EnginePool (each backend), start the real engine entrypoint
 * (`engine-pod/src/main.ts`) and it turns ready (`/readyz` 200). Only what
 * the cluster supplies is substituted: `$(POD_NAME)` (downward API), the
 * port (a free one, not 8080), and for llama-cpp the model and draft-model
 * paths (an init container downloads them to /models in a pod; here the
 * generated `test` model, or for a pool with adapters Gemma 3 270M and the
 * shipped CML adapter, which only load on the model they were trained for). The NATS URL is a real nats-server's. The openai pool then serves a
 * scripted session over HTTP against a real upstream (llama.cpp's server),
 * and refuses `async` with its reason.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { parse } from "yaml";
import { SessionClient } from "../../common/src/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { ASYNC_NEEDS_OWN_ENGINE } from "../../engine-pod/src/upstream/index.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { GEMMA_PATH, SHIPPED_CML_ADAPTER } from "../../hack/real-models.js";
import { UpstreamServer } from "../../hack/upstream-server.js";
import type { EnginePool } from "../../operator/src/api/enginepool.js";
import { buildEngineDeployment } from "../../operator/src/resources/engine-pool.js";
import { startNatsServer } from "../helpers/nats-server.js";

const SAMPLES = join(import.meta.dirname, "../../samples");

function samplePools(): { file: string; pool: EnginePool }[] {
  return readdirSync(SAMPLES)
    .filter((f) => f.startsWith("enginepool") && f.endsWith(".yaml"))
    .map((file) => ({ file, pool: { ...(parse(readFileSync(join(SAMPLES, file), "utf8")) as EnginePool), metadata: { name: file.replace(/\.yaml$/, ""), namespace: "default", uid: "u1" } } }));
}

/** The rendered args with the cluster-supplied values substituted. */
function localArgs(args: readonly string[], modelPath: string, podName: string, adapterPath?: string): string[] {
  return args.map((a, i) => {
    if (args[i - 1] === "--port") return "0";
    if (args[i - 1] === "--model" || args[i - 1] === "--draft-model") return modelPath;
    if ((args[i - 1] === "--adapters" || args[i - 1] === "--draft-adapters") && adapterPath !== undefined) return a.split(",").map((one) => one.replace(/^[^@]+/, adapterPath)).join(",");
    return a.replace("$(POD_NAME)", podName);
  });
}

t.test("every sample EnginePool's rendered engine args start the engine entrypoint", async (t) => {
  const nats = await startNatsServer(t);
  const modelPath = await ensureModel({ preset: "test" });
  const pools = samplePools();
  t.ok(pools.some((p) => p.pool.spec.runtime.backend === "openai"), "an openai-backend sample exists");
  t.ok(pools.some((p) => p.pool.spec.runtime.backend === "llama-cpp"), "a llama-cpp sample exists");
  // An adapter loads only on its own base model: such a pool runs Gemma with the shipped adapter.
  const realModels = existsSync(GEMMA_PATH) && existsSync(SHIPPED_CML_ADAPTER);
  for (const { file, pool } of pools) {
    const withAdapters = (pool.spec.model?.adapters ?? []).length > 0;
    const skip = withAdapters && !realModels ? `needs ${GEMMA_PATH} (hack/tools/50-gemma.sh) and ${SHIPPED_CML_ADAPTER}` : false;
    await t.test(`${file} (${pool.spec.runtime.backend})`, { skip }, async (t) => {
      const dep = buildEngineDeployment(pool, { image: "interlace:test", natsUrl: nats.url, routerUrl: "http://router" });
      const spec = dep.spec!.template.spec!;
      const c = spec.containers[0]!;
      if (pool.spec.runtime.backend === "openai") {
        t.notOk(c.resources?.limits?.["nvidia.com/gpu"], "no GPU request");
        t.same(spec.volumes?.map((v) => v.name), ["tmp"], "no model or KV-swap volume");
        t.same(spec.initContainers ?? [], [], "no model download");
        t.ok(c.args!.includes(pool.spec.runtime.upstreamURL!), "the upstream URL is passed through");
      }
      // A draft model is rendered as --draft-model, which the engine loads beside the main model.
      t.equal(c.args!.includes("--draft-model"), pool.spec.draftModel !== undefined, "--draft-model rendered exactly when the pool has a draft model");
      t.equal(c.args!.includes("--adapters"), (pool.spec.model?.adapters ?? []).length > 0, "--adapters rendered exactly when the model has adapters");
      const args = withAdapters ? localArgs(c.args!, GEMMA_PATH, `sample-${pool.metadata!.name}`, SHIPPED_CML_ADAPTER) : localArgs(c.args!, modelPath, `sample-${pool.metadata!.name}`);
      const engine = await spawnEngine(args);
      t.teardown(() => engine.stop());
      const ready = await fetch(`${engine.url}/readyz`);
      t.equal(ready.status, 200, "ready");
      if (pool.spec.runtime.backend === "openai") {
        const res = await fetch(`${engine.url}/v1/sessions`, { method: "POST", body: JSON.stringify({ prompt: "hi", mode: "async" }) });
        t.equal(res.status, 400);
        t.match(await res.json(), { error: { code: "bad_request", message: ASYNC_NEEDS_OWN_ENGINE } });
      }
    });
  }
});

t.test("an openai-backend pod serves a session over HTTP from a real upstream", async (t) => {
  const nats = await startNatsServer(t);
  const upstream = await UpstreamServer.start({ preset: "test" });
  t.teardown(() => upstream.stop());
  const pool = samplePools().find((p) => p.pool.spec.runtime.backend === "openai")!.pool;
  pool.spec.runtime.upstreamURL = upstream.url;
  pool.spec.runtime.upstreamModel = upstream.model;
  const dep = buildEngineDeployment(pool, { image: "interlace:test", natsUrl: nats.url, routerUrl: "http://router" });
  // In-process builtin tools: this checks the HTTP path, the NATS path is covered in test/upstream.
  const args = localArgs(dep.spec!.template.spec!.containers[0]!.args!, "", "openai-pod").filter((_, i, all) => !["--executor", "--nats-url", "--pool"].includes(all[i]!) && !["--executor", "--nats-url", "--pool"].includes(all[i - 1]!));
  const engine = await spawnEngine(args);
  t.teardown(() => engine.stop());
  const client = new SessionClient(engine.url);
  const { id } = await client.create({
    prompt: "echo something",
    tools: [{ name: "echo", description: "echo", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } }],
    mode: "syncParallel",
    temperature: 0,
    policy: { type: "lpt-dag", calls: [{ id: "e1", tool: "echo", arguments: { text: "pong" }, dependsOn: [] }], finalText: " ok" },
  });
  const events = [];
  for await (const e of client.events(id)) events.push(e);
  const done = events.at(-1);
  t.match(done, { type: "done", reason: "eos", scripted: true });
  t.match(events.find((e) => e.type === "interrupt"), { id: "e1", kind: "tool_result", value: "pong" });
  const metrics = await (await fetch(`${engine.url}/metrics`)).text();
  t.match(metrics, /interlace_engine_upstream_requests_total\{outcome="ok"\} 2/);
});
