import t from "tap";
import { parse } from "yaml";
import { compileSchema, toolRunnerConfigSchema, type ToolRunnerConfig } from "../../common/src/protocol/index.js";
import { parseEnginePodOptions } from "../../engine-pod/src/config.js";
import { parseArgv } from "../../common/src/index.js";
import { parseToolRunnerOptions } from "../../toolrunner/src/options.js";
import type { V1Pod } from "@kubernetes/client-node";
import { Reason, type AgentApp, type EnginePool, type ToolPool } from "../../operator/src/api/index.js";
import { modelCheckFailure } from "../../operator/src/controllers/engine-pods.js";
import {
  appEndpoint,
  buildAppConfigMap,
  buildEngineDeployment,
  buildEnginePdb,
  buildEngineService,
  buildToolRunnerDeployment,
  buildToolSpecConfigMap,
  renderRunnerConfig,
  resolveAppConfig,
  APP_CONFIG_KEY,
  RUNNER_SPEC_KEY,
  type AppConfig,
  type BuildOptions,
} from "../../operator/src/resources/index.js";

const build: BuildOptions = { image: "example/interlace:1", natsUrl: "nats://nats:4222", routerUrl: "http://router:8080" };

function enginePool(spec: Partial<EnginePool["spec"]> = {}): EnginePool {
  return {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "EnginePool",
    metadata: { name: "qwen", namespace: "team", uid: "uid-ep", generation: 3 },
    spec: { model: { path: "/models/q.gguf" }, runtime: { backend: "llama-cpp" }, ...spec },
  };
}

function toolPool(tools: ToolPool["spec"]["tools"], extra: Partial<ToolPool["spec"]> = {}, name = "web"): ToolPool {
  return {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "ToolPool",
    metadata: { name, namespace: "team", uid: `uid-${name}`, generation: 1 },
    spec: { tools, ...extra },
  };
}

const search = { name: "search", description: "web search", parameters: { type: "object" }, http: { url: "http://search/api", timeoutMs: 500 }, estimatedLatencyMs: 800, speculative: true };
const calc = { name: "calculator", description: "math", parameters: { type: "object" }, builtin: { name: "calculator" }, idempotent: true };

t.test("engine Deployment: args parse with the engine's own option parser", async (t) => {
  const pool = enginePool({ replicas: 3, runtime: { backend: "llama-cpp", device: "cuda", contextSize: 8192, parallelSequences: 16, threads: 6, prefixStore: 3 }, kvPolicy: "swap", resources: { gpus: 2, memory: "24Gi", cpu: "4" } });
  const dep = buildEngineDeployment(pool, build);
  t.equal(dep.metadata?.name, "qwen-engine");
  t.equal(dep.metadata?.namespace, "team");
  t.equal(dep.spec?.replicas, 3);
  t.same(dep.metadata?.ownerReferences, [{ apiVersion: "interlace.dev/v1alpha1", kind: "EnginePool", name: "qwen", uid: "uid-ep", controller: true, blockOwnerDeletion: true }]);
  const c = dep.spec?.template.spec?.containers[0]!;
  t.equal(c.image, "example/interlace:1");
  t.same(c.command, ["node", "dist/engine-pod/src/main.js"]);
  t.same(c.resources?.limits, { "nvidia.com/gpu": "2", memory: "24Gi" });
  t.same(c.resources?.requests, { cpu: "4", memory: "24Gi" });
  t.equal(c.readinessProbe?.httpGet?.path, "/readyz");
  t.equal(c.livenessProbe?.httpGet?.path, "/healthz");
  t.equal(c.securityContext?.readOnlyRootFilesystem, true);
  t.same(c.securityContext?.capabilities?.drop, ["ALL"]);
  t.equal(dep.spec?.template.spec?.securityContext?.runAsNonRoot, true);
  t.same(dep.spec?.selector.matchLabels, dep.spec?.template.metadata?.labels && Object.fromEntries(Object.entries(dep.spec.template.metadata.labels).filter(([k]) => k.startsWith("app.kubernetes.io/"))));
  // The downward API supplies POD_NAME; Kubernetes expands $(POD_NAME) in args.
  t.ok(c.env?.some((e) => e.name === "POD_NAME" && e.valueFrom?.fieldRef?.fieldPath === "metadata.name"));
  const args = (c.args ?? []).map((a) => (a === "$(POD_NAME)" ? "qwen-engine-abc12" : a));
  const parsed = parseEnginePodOptions({ flags: parseArgv(args), env: {} });
  t.equal(parsed.server.port, 8080);
  t.equal(parsed.engine.modelPath, "/models/q.gguf");
  t.equal(parsed.executor.kind, "nats");
  t.equal(parsed.executor.natsUrl, "nats://nats:4222");
  t.equal(parsed.podName, "qwen-engine-abc12");
  t.match(parsed.engine, { contextSize: 8192, sequences: 16, threads: 6, kvPolicy: "swap", prefixStore: 3, kvRetention: "eta", kvRetentionTtlMs: 30_000 });
  // The retention policy and TTL an EnginePool names reach the engine's own parser.
  const ttlPool = buildEngineDeployment(enginePool({ kvRetention: { policy: "ttl", ttlSeconds: 90 } }), build).spec?.template.spec?.containers[0]!;
  t.match(parseEnginePodOptions({ flags: parseArgv((ttlPool.args ?? []).map((a) => (a === "$(POD_NAME)" ? "p" : a))), env: {} }).engine, { kvRetention: "ttl", kvRetentionTtlMs: 90_000 });
  // Swapped KV state goes to /dev/shm: a memory-backed volume, not the container's 64 MiB default.
  const shm = c.volumeMounts?.find((m) => m.mountPath === "/dev/shm");
  t.ok(shm, "/dev/shm is mounted");
  t.match(dep.spec?.template.spec?.volumes?.find((v) => v.name === shm?.name)?.emptyDir, { medium: "Memory" });
});

t.test("engine Deployment: the drain's grace period reaches the engine, and the pod's termination grace covers it and the engine's shutdown", async (t) => {
  const podArgs = (pool: EnginePool): string[] => (buildEngineDeployment(pool, build).spec?.template.spec?.containers[0]?.args ?? []).map((a) => (a === "$(POD_NAME)" ? "p" : a));
  const drain = (pool: EnginePool): number => parseEnginePodOptions({ flags: parseArgv(podArgs(pool)), env: {} }).server.drainGraceMs;
  const termination = (pool: EnginePool): number | undefined => buildEngineDeployment(pool, build).spec?.template.spec?.terminationGracePeriodSeconds;
  t.equal(drain(enginePool({ drainGraceSeconds: 120 })), 120_000, "the engine's own parser reads 120 s");
  t.equal(termination(enginePool({ drainGraceSeconds: 120 })), 135, "SIGKILL 15 s after the grace period (the engine's shutdown bound)");
  t.equal(drain(enginePool()), 25_000, "absent: the engine's default");
  t.equal(termination(enginePool()), 40);
  t.equal(drain(enginePool({ drainGraceSeconds: 0 })), 0, "0: live sessions are cut at once, with the reason");
  t.equal(termination(enginePool({ drainGraceSeconds: 0 })), 15);
});

t.test("engine model sources: PVC mounted read-only, hostPath file mounted read-only, URL fetched by an init container", async (t) => {
  const pvc = buildEngineDeployment(enginePool({ model: { pvc: { claimName: "models", path: "q/q.gguf" } } }), build);
  const podSpec = pvc.spec?.template.spec!;
  t.same(podSpec.volumes?.find((v) => v.name === "model")?.persistentVolumeClaim, { claimName: "models", readOnly: true });
  const c = podSpec.containers[0]!;
  t.same(c.volumeMounts?.find((m) => m.name === "model"), { name: "model", mountPath: "/models", readOnly: true });
  t.equal(c.args?.[c.args.indexOf("--model") + 1], "/models/q/q.gguf");
  t.same(podSpec.initContainers?.map((i) => i.name), ["check-model"], "only the model check runs before the engine");

  const url = buildEngineDeployment(enginePool({ model: { url: "https://example.com/q.gguf", sha256: "a".repeat(64) } }), build);
  const spec = url.spec?.template.spec!;
  t.ok(spec.volumes?.find((v) => v.name === "model")?.emptyDir);
  const init = spec.initContainers?.[0]!;
  t.same(spec.initContainers?.map((i) => i.name), ["fetch-model", "check-model"], "the download, then the check");
  t.equal(init.image, "example/interlace:1");
  t.ok(init.command?.includes("https://example.com/q.gguf"));
  t.ok(init.command?.includes("a".repeat(64)));
  t.equal(spec.containers[0]!.args?.[spec.containers[0]!.args.indexOf("--model") + 1], "/models/model.gguf");

  // A file on the node: a read-only hostPath volume of type File, mounted as the file itself.
  const host = buildEngineDeployment(enginePool({ model: { hostPath: "/var/models/q.gguf" } }), build);
  const hostSpec = host.spec?.template.spec!;
  t.same(hostSpec.volumes?.find((v) => v.name === "model")?.hostPath, { path: "/var/models/q.gguf", type: "File" });
  t.same(hostSpec.containers[0]!.volumeMounts?.find((m) => m.name === "model"), { name: "model", mountPath: "/models/q.gguf", readOnly: true });
  t.equal(hostSpec.containers[0]!.args?.[hostSpec.containers[0]!.args.indexOf("--model") + 1], "/models/q.gguf");
  t.same(hostSpec.initContainers?.map((i) => i.name), ["check-model"]);

  const image = buildEngineDeployment(enginePool({ image: "custom/engine:2" }), build);
  t.equal(image.spec?.template.spec?.containers[0]!.image, "custom/engine:2", "spec.image overrides the operator default");
});

t.test("LoRA adapters: each from its own source, rendered with its scale; the model check covers them; the draft's too", async (t) => {
  const pool = enginePool({
    model: {
      pvc: { claimName: "models", path: "gemma/gemma.gguf" },
      adapters: [
        { name: "cml", hostPath: "/srv/lora/cml.gguf" },
        { name: "style", url: "https://example.com/style.gguf", sha256: "b".repeat(64), scale: 0.5 },
        { name: "shared", pvc: { claimName: "loras", path: "x/shared.gguf" } },
      ],
    },
    draftModel: { model: { path: "/drafts/d.gguf", adapters: [{ name: "cml", path: "/drafts/cml.gguf" }] } },
  });
  const dep = buildEngineDeployment(pool, build);
  const spec = dep.spec!.template.spec!;
  const c = spec.containers[0]!;
  const arg = (flag: string): string | undefined => c.args?.[c.args.indexOf(flag) + 1];
  t.equal(arg("--adapters"), "/models-adapters/cml/cml.gguf,/models-adapters/style/adapter.gguf@0.5,/models-adapters/shared/x/shared.gguf");
  t.equal(arg("--draft-adapters"), "/drafts/cml.gguf");
  t.same(spec.volumes?.find((v) => v.name === "model-adapter-cml")?.hostPath, { path: "/srv/lora/cml.gguf", type: "File" });
  t.same(spec.volumes?.find((v) => v.name === "model-adapter-shared")?.persistentVolumeClaim, { claimName: "loras", readOnly: true });
  t.ok(c.volumeMounts?.every((m) => m.readOnly === true || m.name === "tmp" || m.name === "kv-swap" || !m.name.includes("adapter")), "adapters are mounted read-only");
  t.same(spec.initContainers?.map((i) => i.name), ["fetch-model-adapter-style", "check-model", "check-model-draft"]);
  const check = spec.initContainers!.find((i) => i.name === "check-model")!;
  t.same(check.command, ["node", "dist/engine-pod/src/check-model.js"]);
  t.same(check.args, ["--model", "/models/gemma/gemma.gguf", "--adapters", arg("--adapters")]);
  t.equal(check.terminationMessagePolicy, "FallbackToLogsOnError", "the check's reason reaches the pod status");
  const mounted = new Set(check.volumeMounts?.map((m) => m.name));
  for (const v of ["model", "model-adapter-cml", "model-adapter-style", "model-adapter-shared"]) t.ok(mounted.has(v), `the check sees ${v}`);
  // The engine reads the same flags back.
  const parsed = parseEnginePodOptions({ flags: parseArgv((c.args ?? []).map((a) => (a === "$(POD_NAME)" ? "p" : a))), env: {} });
  t.same(parsed.engine.adapters, [
    { path: "/models-adapters/cml/cml.gguf", scale: 1 },
    { path: "/models-adapters/style/adapter.gguf", scale: 0.5 },
    { path: "/models-adapters/shared/x/shared.gguf", scale: 1 },
  ]);
  t.same(parsed.speculation.draftAdapters, [{ path: "/drafts/cml.gguf", scale: 1 }]);
  // An openai backend runs no model in the pod: nothing to check.
  const upstream = buildEngineDeployment(enginePool({ model: undefined as never, runtime: { backend: "openai", upstreamURL: "http://vllm:8000" } }), build);
  t.notOk(upstream.spec?.template.spec?.initContainers, "no model check without a model");
});

t.test("a failed model check is read from the pods' init container status", async (t) => {
  const pod = (message: string | undefined, exitCode = 1): V1Pod => ({
    metadata: { name: "qwen-engine-1" },
    status: { initContainerStatuses: [{ name: "check-model", image: "i", imageID: "", ready: false, restartCount: 1, ...(message !== undefined ? { lastState: { terminated: { exitCode, message } } } : {}) }] },
  });
  t.equal(modelCheckFailure([pod(undefined)]), undefined, "still running: nothing to report");
  t.equal(modelCheckFailure([pod("", 0)]), undefined, "passed");
  t.same(modelCheckFailure([pod("AdapterNotFound: adapter /a.gguf: no such file")]), { reason: "AdapterNotFound", message: "adapter /a.gguf: no such file", pod: "qwen-engine-1" });
  t.same(modelCheckFailure([pod("segfault")]), { reason: "ModelInvalid", message: "segfault", pod: "qwen-engine-1" }, "an unexpected message is still reported");
  t.equal(Reason.AdapterIncompatible, "AdapterIncompatible", "the check's reasons are condition reasons");
});

t.test("headless Service and PDB select the engine pods", async (t) => {
  const pool = enginePool();
  const dep = buildEngineDeployment(pool, build);
  const svc = buildEngineService(pool);
  t.equal(svc.spec?.clusterIP, "None");
  t.same(svc.spec?.selector, dep.spec?.selector.matchLabels);
  t.equal(svc.spec?.ports?.[0]?.port, 8080);
  const pdb = buildEnginePdb(pool);
  t.same(pdb.spec?.selector?.matchLabels, dep.spec?.selector.matchLabels);
  t.equal(pdb.spec?.maxUnavailable, 1);
  for (const o of [svc, pdb]) t.equal(o.metadata?.ownerReferences?.[0]?.uid, "uid-ep");
});

t.test("builders are pure: same input, same output", async (t) => {
  const pool = enginePool();
  t.same(buildEngineDeployment(pool, build), buildEngineDeployment(pool, build));
  const tp = toolPool([search, calc]);
  const a = renderRunnerConfig(tp);
  const b = renderRunnerConfig(tp);
  t.same(a, b);
});

t.test("ToolPool: the runner spec file validates against the runner's schema", async (t) => {
  const tp = toolPool([search, calc, { name: "docs", description: "mcp", parameters: { type: "object" }, mcp: { url: "http://mcp/mcp", tool: "lookup" } }], { concurrency: 4, timeoutMs: 9000, retries: 1, replicas: 2 });
  const rendered = renderRunnerConfig(tp);
  if (!rendered.ok) throw new Error(rendered.message);
  const cm = buildToolSpecConfigMap(tp, rendered.config);
  const file = parse(cm.data?.[RUNNER_SPEC_KEY] ?? "") as ToolRunnerConfig;
  const validate = compileSchema<ToolRunnerConfig>(toolRunnerConfigSchema, "spec");
  const v = validate(file);
  t.ok(v.ok, v.ok ? "valid" : v.error);
  t.equal(file.namespace, "team");
  t.equal(file.pool, "web");
  t.equal(file.concurrency, 4);
  t.same(file.tools[0], {
    name: "search",
    description: "web search",
    parameters: { type: "object" },
    estimatedLatencyMs: 800,
    speculative: true,
    timeoutMs: 500,
    implementation: { type: "http", url: "http://search/api", method: "POST" },
  });
  t.same(file.tools[1]?.implementation, { type: "builtin", builtin: "calculator" });
  t.same(file.tools[2]?.implementation, { type: "mcp", url: "http://mcp/mcp", tool: "lookup" });

  const dep = buildToolRunnerDeployment(tp, rendered.config, build);
  t.equal(dep.metadata?.name, "web-tools");
  t.equal(dep.spec?.replicas, 2);
  const c = dep.spec?.template.spec?.containers[0]!;
  t.same(c.command, ["node", "dist/toolrunner/src/main.js"]);
  const runnerOpts = parseToolRunnerOptions({ flags: parseArgv((c.args ?? []).map((a) => (a === "$(POD_NAME)" ? "web-tools-x1" : a))), env: {} });
  t.equal(runnerOpts.specFile, "/etc/interlace/tools.yaml");
  t.same(runnerOpts.natsUrl, ["nats://nats:4222"]);
  t.equal(runnerOpts.port, 8080);
  t.equal(runnerOpts.runnerId, "web-tools-x1");
  t.ok(c.volumeMounts?.some((m) => m.mountPath === "/etc/interlace" && m.readOnly), "the spec file is mounted where --spec-file points");
  t.equal(dep.spec?.template.spec?.volumes?.find((v) => v.name === "spec")?.configMap?.name, "web-tools");

  const changed = renderRunnerConfig(toolPool([search]));
  if (!changed.ok) throw new Error(changed.message);
  t.not(
    buildToolRunnerDeployment(tp, changed.config, build).spec?.template.metadata?.annotations?.["interlace.dev/spec-hash"],
    dep.spec?.template.metadata?.annotations?.["interlace.dev/spec-hash"],
    "a tool change changes the pod template (runners restart with the new file)",
  );
});

t.test("ToolPool: a tool without an implementation is reported, not rendered", async (t) => {
  const r = renderRunnerConfig(toolPool([{ name: "bare", description: "no implementation", parameters: { type: "object" } }]));
  t.equal(r.ok, false);
  if (!r.ok) t.match(r.message, /bare has no implementation/);
});

function app(spec: Partial<AgentApp["spec"]> = {}): AgentApp {
  return {
    apiVersion: "interlace.dev/v1alpha1",
    kind: "AgentApp",
    metadata: { name: "helper", namespace: "team", uid: "uid-app", generation: 1 },
    spec: { enginePool: { name: "qwen" }, toolPools: [{ name: "web" }], systemPrompt: "be brief", ...spec },
  };
}

t.test("AgentApp: references resolve into a config, or a Degraded reason", async (t) => {
  const pools = new Map([["web", toolPool([search, calc])]]);
  t.match(resolveAppConfig(app(), undefined, pools), { ok: false, reason: Reason.EnginePoolNotFound });
  t.match(resolveAppConfig(app(), enginePool(), new Map()), { ok: false, reason: Reason.ToolPoolNotFound, message: /ToolPool team\/web not found/ });
  t.match(resolveAppConfig(app({ toolPools: [{ name: "web", tools: ["nope"] }] }), enginePool(), pools), { ok: false, reason: Reason.ToolNotFound });
  const clash = new Map([...pools, ["web2", toolPool([calc], {}, "web2")]]);
  t.match(resolveAppConfig(app({ toolPools: [{ name: "web" }, { name: "web2" }] }), enginePool(), clash), { ok: false, reason: Reason.InvalidSpec });
  // async on a pool that fronts an upstream server: Degraded with the reason; the sync modes resolve.
  const upstream = enginePool({ runtime: { backend: "openai", upstreamURL: "http://vllm:8000/v1" } });
  delete upstream.spec.model;
  t.match(resolveAppConfig(app(), upstream, pools), { ok: false, reason: Reason.ModeUnsupportedByBackend, message: /callingMode async needs Interlace's own engine/ });
  t.ok(resolveAppConfig(app({ callingMode: "syncParallel" }), upstream, pools).ok);

  const subset = resolveAppConfig(app({ toolPools: [{ name: "web", tools: ["calculator"] }] }), enginePool(), pools);
  t.ok(subset.ok);
  if (subset.ok) t.same(subset.config.tools.map((x) => x.name), ["calculator"]);

  const ok = resolveAppConfig(app(), enginePool(), pools);
  if (!ok.ok) throw new Error(ok.message);
  t.same(ok.config.enginePool, { name: "qwen" }, "the pool by name only: the router places by engine, through no Service");
  t.same(ok.config.tools[0]?.pool, { namespace: "team", name: "web" });
  t.equal(ok.config.callingMode, "async");
  t.equal(ok.config.interrupts.userInterrupts, true, "async mode defaults to user interrupts on");
  const cm = buildAppConfigMap(app(), ok.config);
  t.equal(cm.metadata?.name, "helper-app-config");
  t.equal(cm.metadata?.ownerReferences?.[0]?.kind, "AgentApp");
  t.same(JSON.parse(cm.data?.[APP_CONFIG_KEY] ?? "") as AppConfig, ok.config);
  t.equal(appEndpoint(app(), "http://router:8080/"), "http://router:8080/v1/apps/team/helper");
});

t.test("AgentApp kvRetention: the app's retention hint is rendered into its config, absent when the spec has none", async (t) => {
  const pools = new Map([["web", toolPool([search, calc])]]);
  const plain = resolveAppConfig(app(), enginePool(), pools);
  t.equal(plain.ok && plain.config.retention, undefined);
  const hinted = resolveAppConfig(app({ kvRetention: { expectedToolMs: 45_000, retentionSeconds: 60 } }), enginePool(), pools);
  t.same(hinted.ok && hinted.config.retention, { expectedToolMs: 45_000, retentionSeconds: 60 });
});

t.test("AgentApp speculation: defaults, λ / max in flight / pools rendered into the config (pools as namespace/name), unknown pools Degraded", async (t) => {
  const pools = new Map([["web", toolPool([search, calc])]]);
  const plain = resolveAppConfig(app(), enginePool(), pools);
  t.same(plain.ok && plain.config.speculation, { enabled: false, lambda: 1, maxInFlight: 2, engineSide: true });
  const on = resolveAppConfig(app({ speculation: { enabled: true, lambda: 3, maxInFlight: 4, pools: ["web"], engineSide: false } }), enginePool(), pools);
  t.same(on.ok && on.config.speculation, { enabled: true, lambda: 3, maxInFlight: 4, engineSide: false, pools: ["team/web"] });
  t.ok(on.ok && on.config.tools.find((x) => x.name === "search")?.speculative, "the ToolPool's speculative flag reaches the tool spec");
  t.match(resolveAppConfig(app({ speculation: { enabled: true, pools: ["db"] } }), enginePool(), pools), {
    ok: false,
    reason: Reason.InvalidSpec,
    message: /speculation.pools names ToolPool db/,
  });
});

t.test("AgentApp semantic functions: outputs rendered in template order with their settings; problems Degraded naming the field", async (t) => {
  const pools = new Map([["web", toolPool([search, calc])]]);
  const fn = { name: "plan", template: "Task: {{input:task}}\nSteps: {{output:steps}}\nRisks: {{output:risks}}", outputs: [{ name: "risks", temperature: 0.5 }, { name: "steps", maxTokens: 4096 }] };
  const ok = resolveAppConfig(app({ semanticFunctions: [fn], maxTokens: 512 }), enginePool(), pools);
  t.same(ok.ok && ok.config.semanticFunctions, [
    {
      name: "plan",
      template: fn.template,
      outputs: [
        { name: "steps", maxTokens: 512, temperature: 0 },
        { name: "risks", maxTokens: 128, temperature: 0.5 },
      ],
      tools: false,
    },
  ]);
  const bad = (template: string, outputs: { name: string }[]): unknown => resolveAppConfig(app({ semanticFunctions: [{ name: "ok", template: "{{output:a}}", outputs: [{ name: "a" }] }, { name: "f", template, outputs }] }), enginePool(), pools);
  t.match(bad("{{input:x}} {{output:y}}", []), { ok: false, reason: Reason.InvalidSpec, message: /spec\.semanticFunctions\[1\]\.outputs: the template's \{\{output:y\}\} is not declared/ });
  t.match(bad("{{output:y}} and {{output:y}}", [{ name: "y" }]), { ok: false, message: /spec\.semanticFunctions\[1\]\.template: output "y" appears twice/ });
  t.match(bad("{{input:y}} {{output:y}}", [{ name: "y" }]), { ok: false, message: /spec\.semanticFunctions\[1\]\.template: "y" is both an input and an output of f \(a cycle/ });
  t.match(bad("{{input:x-y}} {{output:y}}", [{ name: "y" }]), { ok: false, message: /invalid variable name/ });
  t.match(bad("{{output:y}}", [{ name: "y" }, { name: "z" }]), { ok: false, message: /"z" has no \{\{output:z\}\} placeholder/ });
});
