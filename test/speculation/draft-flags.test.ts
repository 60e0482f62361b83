/**
 * @module The engine accepts the flags the operator renders for an EnginePool
 * with a draft model: the Deployment's args for such a pool (model and draft
 * model as local paths, `$(POD_NAME)` expanded as Kubernetes would, the port
 * set free) run the real entrypoint against a real nats-server; it becomes
 * ready with the draft model loaded (the `draft_model_loaded` gauge), and the
 * parser reads `--draft-model` / `--max-draft-tokens` and rejects bad values.
 * A pool that leaves the speculation settings out gets the engine's own
 * defaults (one source, `SPECULATION_LIMITS`); the draft's threads and the
 * tool cache's bounds are rendered and read back as set.
 */
import t from "tap";
import { parseArgv, SPECULATION_LIMITS } from "../../common/src/index.js";
import { parseEnginePodOptions } from "../../engine-pod/src/config.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { spawnEngine } from "../../hack/engine-process.js";
import type { EnginePool } from "../../operator/src/api/index.js";
import { buildEngineDeployment } from "../../operator/src/resources/index.js";
import { startNatsServer } from "../helpers/nats-server.js";

const parse = (args: string[]) => parseEnginePodOptions({ flags: parseArgv(["--model-preset", "test", ...args]), env: {} });

t.test("the parser reads the draft flags and rejects bad ones", async (t) => {
  const o = parse(["--draft-model", "/m/d.gguf", "--max-draft-tokens", "12"]);
  t.equal(o.speculation.draftModelPath, "/m/d.gguf");
  t.equal(o.speculation.maxDraftTokens, 12);
  t.equal(o.speculation.draftThreads, 1, "the draft's own thread by default");
  t.equal(parse(["--draft-threads", "2"]).speculation.draftThreads, 2);
  t.throws(() => parse(["--draft-threads", "0"]), /--draft-threads/);
  t.equal(parse([]).speculation.draftModelPath, undefined);
  t.throws(() => parse(["--max-draft-tokens", "0"]), /--max-draft-tokens/);
  t.throws(() => parse(["--max-draft-tokens", "many"]), /--max-draft-tokens/);
  t.throws(() => parse(["--draft-model", ""]), /--draft-model/);
});

t.test("the operator renders the engine's speculation defaults and the draft threads and tool cache bounds set on a pool", async (t) => {
  const pool = (extra: Partial<EnginePool["spec"]>): EnginePool => ({
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "p", namespace: "default" },
    spec: { model: { path: "/m/main.gguf" }, draftModel: { model: { path: "/m/d.gguf" } }, runtime: { backend: "llama-cpp" }, ...extra },
  });
  // The rendered args read back by the engine's own parser (less the model and what only a pod has).
  const dropped = ["--executor", "--nats-url", "--pod-name", "--pool", "--model"];
  const readBack = (p: EnginePool) => {
    const args = buildEngineDeployment(p, { image: "x", natsUrl: "nats://n:4222", routerUrl: "http://r" }).spec!.template.spec!.containers[0]!.args!;
    return parse(args.filter((a, i) => !dropped.includes(a) && !dropped.includes(args[i - 1]!))).speculation;
  };
  const defaults = readBack(pool({}));
  const engineDefaults = parse([]).speculation;
  t.equal(defaults.maxDraftTokens, engineDefaults.maxDraftTokens, "max draft tokens: the engine's default");
  t.equal(defaults.maxDraftTokens, SPECULATION_LIMITS.maxDraftTokens.default);
  t.same(
    [defaults.draftThreads, defaults.cacheTtlMs, defaults.cacheEntriesPerSession, defaults.cacheMaxBytes, defaults.maxCachedOutputBytes],
    [engineDefaults.draftThreads, engineDefaults.cacheTtlMs, engineDefaults.cacheEntriesPerSession, engineDefaults.cacheMaxBytes, engineDefaults.maxCachedOutputBytes],
    "nothing set: the engine's own defaults",
  );
  const set = readBack(pool({ draftModel: { model: { path: "/m/d.gguf" }, maxDraftTokens: 24, threads: 3 }, toolCache: { ttlSeconds: 5, entriesPerSession: 4, maxBytes: 65_536, maxOutputBytes: 1024 } }));
  t.match(set, { maxDraftTokens: 24, draftThreads: 3, cacheTtlMs: 5000, cacheEntriesPerSession: 4, cacheMaxBytes: 65_536, maxCachedOutputBytes: 1024 });
});

t.test("the operator's rendered args for a pool with a draft model start the engine", async (t) => {
  const [modelPath, draftPath] = await Promise.all([ensureModel({ preset: "test" }), ensureModel({ preset: "test", seed: 2 })]);
  const nats = await startNatsServer(t);
  const pool: EnginePool = {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "spec", namespace: "default", uid: "uid", generation: 1 },
    spec: {
      model: { path: modelPath },
      draftModel: { model: { path: draftPath }, maxDraftTokens: 6, threads: 1 },
      toolCache: { ttlSeconds: 30, entriesPerSession: 8 },
      runtime: { backend: "llama-cpp", device: "cpu", contextSize: 1024, parallelSequences: 2, threads: 1 },
    },
  };
  const dep = buildEngineDeployment(pool, { image: "x", natsUrl: nats.url, routerUrl: "http://router" });
  const rendered = dep.spec!.template.spec!.containers[0]!.args!;
  t.match(rendered.join(" "), /--draft-model \S+ --max-draft-tokens 6/);
  // What the kubelet does ($(POD_NAME) from the downward API) and a free port instead of 8080.
  const args = rendered.map((a, i) => (rendered[i - 1] === "--port" ? "0" : a.replace("$(POD_NAME)", "spec-engine-0")));
  const engine = await spawnEngine(args, { readyTimeoutMs: 90_000 });
  t.teardown(() => engine.stop());
  const metrics = await (await fetch(`${engine.url}/metrics`)).text();
  t.match(metrics, new RegExp(`interlace_engine_draft_model_loaded\\{model="${draftPath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"\\} 1`));
  t.match(metrics, /interlace_engine_speculations_started_total 0/);
});
