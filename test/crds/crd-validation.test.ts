/**
 * @module The generated CRDs against a real kube-apiserver: they install and
 * become Established, discovery shows the short names and the `interlace`
 * category, the samples are accepted (with defaults filled in), printer
 * columns render, the status subresource works, and a table of invalid
 * objects is each rejected with the schema's or the CEL rule's message
 * (kubeai's model_validation_test style). The InferencePool CRD the chart
 * ships (written from GAIE's v1 API) takes the pool the operator writes,
 * fills in v1's defaults and refuses what v1 refuses.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { parse } from "yaml";
import { API_VERSION, INFERENCE_GROUP, INFERENCE_VERSION, InterlaceKinds, type EnginePool as EnginePoolObject, type KindDefinition } from "../../operator/src/api/index.js";
import { buildInferencePool } from "../../operator/src/resources/index.js";
import { controlPlaneFor, installCrds, kubeRequest } from "../helpers/control-plane.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const NS = "crd-test";

type Obj = Record<string, unknown> & { metadata: { name: string; namespace?: string } };

function sample(file: string): Obj {
  return parse(readFileSync(path.join(ROOT, "samples", file), "utf8")) as Obj;
}

/** A deep copy of `base` named `name`, changed by `edit`. */
function variant(base: Obj, name: string, edit: (o: any) => void): Obj {
  const copy = structuredClone(base) as any;
  copy.metadata = { name };
  edit(copy);
  return copy as Obj;
}

function collection(def: KindDefinition): string {
  return `/apis/${def.group}/${def.version}/namespaces/${NS}/${def.plural}`;
}

function messageOf(body: unknown): string {
  return typeof body === "object" && body !== null && "message" in body ? String((body as { message: unknown }).message) : JSON.stringify(body);
}

const { EnginePool, ToolPool, AgentApp } = InterlaceKinds;
const engine = sample("enginepool.yaml");
const tools = sample("toolpool.yaml");
const app = sample("agentapp.yaml");

interface Case {
  kind: KindDefinition;
  obj: Obj;
  /** Substrings the API server's message must contain. */
  messages: string[];
  /** Also reject unknown fields (kubectl's default since 1.27); those are 400 Bad Request, not 422. */
  strict?: boolean;
}

const invalid: Record<string, Case> = {
  "EnginePool name too long for its Service": {
    kind: EnginePool,
    obj: variant(engine, `e${"x".repeat(56)}`, () => undefined),
    messages: ["an EnginePool name must start with a letter and be at most 56 characters"],
  },
  "InferencePool exposure with an unknown failure mode": {
    kind: EnginePool,
    obj: variant(engine, "exposed-bad", (o) => (o.spec.inferencePool = { failureMode: "Sometimes", pickerReplicas: 0 })),
    messages: ["spec.inferencePool.failureMode: Unsupported value: \"Sometimes\"", "spec.inferencePool.pickerReplicas"],
  },
  "EnginePool name starting with a digit": {
    kind: EnginePool,
    obj: variant(engine, "7b-model", () => undefined),
    messages: ["an EnginePool name must start with a letter"],
  },
  "model with two sources": {
    kind: EnginePool,
    obj: variant(engine, "two-sources", (o) => (o.spec.model.path = "/models/a.gguf")),
    messages: ["a model source is exactly one of path, pvc, hostPath or url"],
  },
  "model with no source": {
    kind: EnginePool,
    obj: variant(engine, "no-source", (o) => (o.spec.model = { sha256: "a".repeat(64) })),
    messages: ["a model source is exactly one of path, pvc, hostPath or url"],
  },
  "draft model with two sources": {
    kind: EnginePool,
    obj: variant(engine, "draft-two", (o) => (o.spec.draftModel = { model: { path: "/d.gguf", pvc: { claimName: "m", path: "d.gguf" } } })),
    messages: ["spec.draftModel.model", "a model source is exactly one of path, pvc, hostPath or url"],
  },
  "tool cache whose single output may exceed its total": {
    kind: EnginePool,
    obj: variant(engine, "cache-inverted", (o) => (o.spec.toolCache = { maxBytes: 1000, maxOutputBytes: 2000 })),
    messages: ["spec.toolCache.maxOutputBytes", "maxOutputBytes must not exceed maxBytes"],
  },
  "tool cache output above the engine's body limit": {
    kind: EnginePool,
    obj: variant(engine, "cache-big", (o) => (o.spec.toolCache = { maxOutputBytes: 2 * 1_048_576 })),
    messages: ["spec.toolCache.maxOutputBytes", "1048576"],
  },
  "adapter with two sources": {
    kind: EnginePool,
    obj: variant(engine, "adapter-two", (o) => (o.spec.model.adapters = [{ name: "cml", path: "/a.gguf", hostPath: "/b.gguf" }])),
    messages: ["spec.model.adapters[0]", "an adapter source is exactly one of path, pvc, hostPath or url"],
  },
  "adapter without a name": {
    kind: EnginePool,
    obj: variant(engine, "adapter-nameless", (o) => (o.spec.model.adapters = [{ path: "/a.gguf" }])),
    messages: ["spec.model.adapters[0].name", "Required value"],
  },
  "two adapters with one name": {
    kind: EnginePool,
    obj: variant(engine, "adapter-twice", (o) => (o.spec.model.adapters = [{ name: "cml", path: "/a.gguf" }, { name: "cml", path: "/b.gguf" }])),
    messages: ["spec.model.adapters[1]", "Duplicate value"],
  },
  "adapter scale of zero": {
    kind: EnginePool,
    obj: variant(engine, "adapter-zero", (o) => (o.spec.model.adapters = [{ name: "cml", path: "/a.gguf", scale: 0 }])),
    messages: ["spec.model.adapters[0].scale", "greater than 0"],
  },
  "adapter path with a list separator": {
    kind: EnginePool,
    obj: variant(engine, "adapter-comma", (o) => (o.spec.model.adapters = [{ name: "cml", pvc: { claimName: "loras", path: "a,b.gguf" } }, { name: "x", hostPath: "/srv/x@2.gguf" }])),
    messages: ["spec.model.adapters[0].pvc.path", "spec.model.adapters[1].hostPath", "should match"],
  },
  "openai backend without upstream URL": {
    kind: EnginePool,
    obj: variant(engine, "openai-no-url", (o) => (o.spec.runtime = { backend: "openai" })),
    messages: ["spec.runtime.upstreamURL", "an openai backend needs an upstreamURL"],
  },
  "upstream URL on llama-cpp": {
    kind: EnginePool,
    obj: variant(engine, "llama-url", (o) => (o.spec.runtime.upstreamURL = "http://vllm:8000")),
    messages: ["upstreamURL is only valid with the openai backend"],
  },
  "prefix store on an openai backend": {
    kind: EnginePool,
    obj: variant(engine, "openai-store", (o) => (o.spec.runtime = { backend: "openai", upstreamURL: "http://vllm:8000", prefixStore: 2 })),
    messages: ["prefixStore is only valid with the llama-cpp backend"],
  },
  "llama-cpp without a model": {
    kind: EnginePool,
    obj: variant(engine, "no-model", (o) => delete o.spec.model),
    messages: ["a llama-cpp engine needs a model"],
  },
  "GPUs on a CPU engine": {
    kind: EnginePool,
    obj: variant(engine, "gpu-cpu", (o) => (o.spec.resources.gpus = 1)),
    messages: ["GPUs need the llama-cpp backend with device cuda"],
  },
  "unknown kvPolicy": {
    kind: EnginePool,
    obj: variant(engine, "bad-kv", (o) => (o.spec.kvPolicy = "sometimes")),
    messages: ["spec.kvPolicy", 'Unsupported value: "sometimes"', '"keep"', '"swap"', '"recompute"', '"auto"'],
  },
  "unknown kvRetention policy": {
    kind: EnginePool,
    obj: variant(engine, "bad-retention", (o) => (o.spec.kvRetention = { policy: "forever" })),
    messages: ["spec.kvRetention.policy", 'Unsupported value: "forever"', '"eta"', '"ttl"', '"lru"', '"pin"', '"discard"'],
  },
  "negative retention TTL": {
    kind: EnginePool,
    obj: variant(engine, "bad-ttl", (o) => (o.spec.kvRetention = { ttlSeconds: -1 })),
    messages: ["spec.kvRetention.ttlSeconds", "greater than or equal to 0"],
  },
  "unknown backend": {
    kind: EnginePool,
    obj: variant(engine, "bad-backend", (o) => (o.spec.runtime.backend = "tensorrt")),
    messages: ["spec.runtime.backend", 'Unsupported value: "tensorrt"'],
  },
  "too many replicas": {
    kind: EnginePool,
    obj: variant(engine, "many", (o) => (o.spec.replicas = 65)),
    messages: ["spec.replicas", "less than or equal to 64"],
  },
  "negative replicas": {
    kind: EnginePool,
    obj: variant(engine, "negative", (o) => (o.spec.replicas = -1)),
    messages: ["spec.replicas", "greater than or equal to 0"],
  },
  "context too small": {
    kind: EnginePool,
    obj: variant(engine, "tiny-ctx", (o) => (o.spec.runtime.contextSize = 16)),
    messages: ["spec.runtime.contextSize", "greater than or equal to 256"],
  },
  "model URL not http": {
    kind: EnginePool,
    obj: variant(engine, "ftp", (o) => (o.spec.model.url = "ftp://models.example/m.gguf")),
    messages: ["spec.model.url", "should match"],
  },
  "memory not a quantity": {
    kind: EnginePool,
    obj: variant(engine, "bad-mem", (o) => (o.spec.resources.memory = "lots")),
    messages: ["spec.resources.memory", "should match"],
  },
  "runtime missing": {
    kind: EnginePool,
    obj: variant(engine, "no-runtime", (o) => delete o.spec.runtime),
    messages: ["spec.runtime", "Required value"],
  },
  "unknown field (strict)": {
    kind: EnginePool,
    obj: variant(engine, "unknown-field", (o) => (o.spec.gpuCount = 2)),
    messages: ['unknown field "spec.gpuCount"'],
    strict: true,
  },
  "tool with two implementations": {
    kind: ToolPool,
    obj: variant(tools, "two-impls", (o) => (o.spec.tools[0].http = { url: "http://x" })),
    messages: ["spec.tools[0]", "a tool has exactly one implementation: http, mcp or builtin"],
  },
  "tool with no implementation": {
    kind: ToolPool,
    obj: variant(tools, "no-impl", (o) => delete o.spec.tools[1].builtin),
    messages: ["spec.tools[1]", "a tool has exactly one implementation: http, mcp or builtin"],
  },
  "no tools": {
    kind: ToolPool,
    obj: variant(tools, "empty", (o) => (o.spec.tools = [])),
    messages: ["spec.tools", "at least 1 items"],
  },
  "duplicate tool names": {
    kind: ToolPool,
    obj: variant(tools, "dupe", (o) => (o.spec.tools[1].name = "echo")),
    messages: ["spec.tools[1]", "Duplicate value"],
  },
  "bad tool name": {
    kind: ToolPool,
    obj: variant(tools, "bad-name", (o) => (o.spec.tools[0].name = "1-echo")),
    messages: ["spec.tools[0].name", "should match"],
  },
  "tool without parameters": {
    kind: ToolPool,
    obj: variant(tools, "no-params", (o) => delete o.spec.tools[0].parameters),
    messages: ["spec.tools[0].parameters", "Required value"],
  },
  "unknown HTTP method": {
    kind: ToolPool,
    obj: variant(tools, "bad-method", (o) => (o.spec.tools[2].http.method = "FETCH")),
    messages: ["spec.tools[2].http.method", 'Unsupported value: "FETCH"'],
  },
  "HTTP GET (the runner sends a JSON body)": {
    kind: ToolPool,
    obj: variant(tools, "get-method", (o) => (o.spec.tools[2].http.method = "GET")),
    messages: ["spec.tools[2].http.method", 'Unsupported value: "GET"', '"POST"', '"PUT"'],
  },
  "zero concurrency": {
    kind: ToolPool,
    obj: variant(tools, "no-concurrency", (o) => (o.spec.concurrency = 0)),
    messages: ["spec.concurrency", "greater than or equal to 1"],
  },
  "too many retries": {
    kind: ToolPool,
    obj: variant(tools, "retries", (o) => (o.spec.retries = 11)),
    messages: ["spec.retries", "less than or equal to 10"],
  },
  "app without engine pool": {
    kind: AgentApp,
    obj: variant(app, "no-engine", (o) => delete o.spec.enginePool),
    messages: ["spec.enginePool", "Required value"],
  },
  "engine pool name not a DNS label": {
    kind: AgentApp,
    obj: variant(app, "bad-ref", (o) => (o.spec.enginePool.name = "Qwen_Small")),
    messages: ["spec.enginePool.name", "should match"],
  },
  "retention hint out of range": {
    kind: AgentApp,
    obj: variant(app, "bad-hint", (o) => (o.spec.kvRetention = { expectedToolMs: -5, retentionSeconds: 1e9 })),
    messages: ["spec.kvRetention.expectedToolMs", "spec.kvRetention.retentionSeconds"],
  },
  "unknown calling mode": {
    kind: AgentApp,
    obj: variant(app, "bad-mode", (o) => (o.spec.callingMode = "parallel")),
    messages: ["spec.callingMode", 'Unsupported value: "parallel"', '"async"', '"sync"', '"syncParallel"'],
  },
  "unknown objective": {
    kind: AgentApp,
    obj: variant(app, "bad-objective", (o) => (o.spec.objective = "cost")),
    messages: ["spec.objective", 'Unsupported value: "cost"'],
  },
  "user interrupts in sync mode": {
    kind: AgentApp,
    obj: variant(app, "sync-intr", (o) => (o.spec.callingMode = "sync")),
    messages: ["user interrupts need callingMode async"],
  },
  "duplicate tool pools": {
    kind: AgentApp,
    obj: variant(app, "dupe-pools", (o) => o.spec.toolPools.push({ name: "basic-tools" })),
    messages: ["spec.toolPools[1]", "Duplicate value"],
  },
  "few-shot role unknown": {
    kind: AgentApp,
    obj: variant(app, "bad-role", (o) => (o.spec.fewShot[0].messages[0].role = "robot")),
    messages: ["spec.fewShot[0].messages[0].role", 'Unsupported value: "robot"'],
  },
  "semantic function without output": {
    kind: AgentApp,
    obj: variant(app, "bad-fn", (o) => (o.spec.semanticFunctions = [{ name: "summarize", template: "Summarize {{input:text}}", outputs: [{ name: "s" }] }])),
    messages: ["a semantic function template needs at least one {{output:name}} placeholder"],
  },
  "autoscaling with minReplicas above maxReplicas": {
    kind: EnginePool,
    obj: variant(engine, "as-inverted", (o) => (o.spec.autoscaling = { minReplicas: 3, maxReplicas: 2 })),
    messages: ["spec.autoscaling.minReplicas", "minReplicas must not exceed maxReplicas"],
  },
  "autoscaling with a negative minReplicas": {
    kind: ToolPool,
    obj: variant(tools, "as-negative", (o) => (o.spec.autoscaling = { minReplicas: -1, maxReplicas: 2 })),
    messages: ["spec.autoscaling.minReplicas", "greater than or equal to 0"],
  },
  "autoscaling with an unknown mode": {
    kind: ToolPool,
    obj: variant(tools, "as-mode", (o) => (o.spec.autoscaling = { mode: "keda", maxReplicas: 2 })),
    messages: ['spec.autoscaling.mode: Unsupported value: "keda"'],
  },
  "autoscaling without maxReplicas": {
    kind: ToolPool,
    obj: variant(tools, "as-nomax", (o) => (o.spec.autoscaling = { minReplicas: 0 })),
    messages: ["spec.autoscaling.maxReplicas", "Required value"],
  },
  "autoscaling beyond the pool's replica cap": {
    kind: EnginePool,
    obj: variant(engine, "as-huge", (o) => (o.spec.autoscaling = { maxReplicas: 65 })),
    messages: ["spec.autoscaling.maxReplicas", "less than or equal to 64"],
  },
  "autoscaling with a negative stabilization window": {
    kind: EnginePool,
    obj: variant(engine, "as-window", (o) => (o.spec.autoscaling = { maxReplicas: 4, scaleDownStabilizationSeconds: -5, idleSecondsBeforeZero: -1 })),
    messages: ["spec.autoscaling.scaleDownStabilizationSeconds", "spec.autoscaling.idleSecondsBeforeZero"],
  },
  "a negative drain grace period": {
    kind: EnginePool,
    obj: variant(engine, "drain-negative", (o) => (o.spec.drainGraceSeconds = -1)),
    messages: ["spec.drainGraceSeconds", "greater than or equal to 0"],
  },
  "a drain grace period beyond an hour": {
    kind: EnginePool,
    obj: variant(engine, "drain-long", (o) => (o.spec.drainGraceSeconds = 3601)),
    messages: ["spec.drainGraceSeconds", "less than or equal to 3600"],
  },
  "SLO with a zero task latency": {
    kind: AgentApp,
    obj: variant(app, "slo-zero", (o) => (o.spec.slo = { taskLatencyP90Ms: 0 })),
    messages: ["spec.slo.taskLatencyP90Ms", "greater than or equal to 1"],
  },
  "SLO whose first token comes after the task ends": {
    kind: AgentApp,
    obj: variant(app, "slo-inverted", (o) => (o.spec.slo = { taskLatencyP90Ms: 1000, ttftP90Ms: 2000 })),
    messages: ["spec.slo.ttftP90Ms", "ttftP90Ms must not exceed taskLatencyP90Ms"],
  },
  "SLO with no objective": {
    kind: AgentApp,
    obj: variant(app, "slo-empty", (o) => (o.spec.slo = {})),
    messages: ["spec.slo", "at least 1"],
  },
  "SLO as a duration string": {
    kind: AgentApp,
    obj: variant(app, "slo-string", (o) => (o.spec.slo = { taskLatencyP90Ms: "5s" })),
    messages: ["spec.slo.taskLatencyP90Ms", "must be of type integer"],
  },
  "semantic function duplicate output": {
    kind: AgentApp,
    obj: variant(app, "fn-dupe", (o) => (o.spec.semanticFunctions = [{ name: "f", template: "A {{output:y}}", outputs: [{ name: "y" }, { name: "y" }] }])),
    messages: ["spec.semanticFunctions[0].outputs[1]", "Duplicate value"],
  },
  "auth naming no Secret": {
    kind: AgentApp,
    obj: variant(app, "auth-empty", (o) => (o.spec.auth = { apiKeySecrets: [] })),
    messages: ["spec.auth.apiKeySecrets", "at least 1"],
  },
  "auth without apiKeySecrets": {
    kind: AgentApp,
    obj: variant(app, "auth-none", (o) => (o.spec.auth = {})),
    messages: ["spec.auth.apiKeySecrets", "Required value"],
  },
  "auth naming a Secret that is not a valid name": {
    kind: AgentApp,
    obj: variant(app, "auth-name", (o) => (o.spec.auth = { apiKeySecrets: [{ name: "Team_Keys" }, { name: "keys", key: "a/b" }] })),
    messages: ["spec.auth.apiKeySecrets[0].name", "spec.auth.apiKeySecrets[1].key", "should match"],
  },
  "auth naming the same Secret key twice": {
    kind: AgentApp,
    obj: variant(app, "auth-dupe", (o) => (o.spec.auth = { apiKeySecrets: [{ name: "keys", key: "a" }, { name: "other" }, { name: "keys", key: "a" }] })),
    messages: ["spec.auth.apiKeySecrets", "each Secret (and key) may be named once"],
  },
};

const valid: Record<string, { kind: KindDefinition; obj: Obj }> = {
  "an app with its own API keys (spec.auth)": {
    kind: AgentApp,
    obj: variant(app, "auth", (o) => (o.spec.auth = { apiKeySecrets: [{ name: "team-a.keys" }, { name: "shared-keys", key: "team-a" }, { name: "shared-keys", key: "team-a-next" }] })),
  },
  "EnginePool exposed as an InferencePool (defaults)": { kind: EnginePool, obj: variant(engine, "exposed", (o) => (o.spec.inferencePool = {})) },
  "openai backend without a model": {
    kind: EnginePool,
    obj: variant(engine, "openai", (o) => {
      delete o.spec.model;
      delete o.spec.resources;
      delete o.spec.draftModel; // a draft model needs the llama-cpp backend
      o.spec.runtime = { backend: "openai", upstreamURL: "http://vllm.llm.svc:8000/v1", upstreamModel: "qwen" };
    }),
  },
  "CUDA engine with a GPU and a PVC model and a draft": {
    kind: EnginePool,
    obj: variant(engine, "cuda", (o) => {
      o.spec.model = { pvc: { claimName: "models", path: "qwen/q4.gguf" } };
      o.spec.runtime.device = "cuda";
      o.spec.runtime.prefixStore = 4;
      o.spec.resources.gpus = 1;
      o.spec.draftModel = { model: { path: "/models/draft.gguf" }, threads: 2 };
      o.spec.toolCache = { ttlSeconds: 300, entriesPerSession: 64 };
      o.spec.nodeSelector = { "nvidia.com/gpu.present": "true" };
    }),
  },
  "mcp tool": {
    kind: ToolPool,
    obj: variant(tools, "mcp", (o) => (o.spec.tools = [{ name: "search", description: "Search.", parameters: { type: "object" }, mcp: { url: "http://mcp:3000/mcp" } }])),
  },
  "sync app without user interrupts": {
    kind: AgentApp,
    obj: variant(app, "sync", (o) => {
      o.spec.callingMode = "syncParallel";
      o.spec.interrupts = { userInterrupts: false };
    }),
  },
  "the programs sample app (semantic functions)": { kind: AgentApp, obj: sample("agentapp-reports.yaml") },
  "the fine-tuned model's sample pool (a LoRA adapter)": { kind: EnginePool, obj: sample("enginepool-cml.yaml") },
  "the fine-tuned model's sample app": { kind: AgentApp, obj: sample("agentapp-cml.yaml") },
  "pools that scale to zero, an external one and an app with an SLO": {
    kind: ToolPool,
    obj: variant(tools, "as-zero", (o) => (o.spec.autoscaling = { minReplicas: 0, maxReplicas: 8, scaleDownStabilizationSeconds: 0, idleSecondsBeforeZero: 60 })),
  },
  "an EnginePool whose engines drain for ten minutes": { kind: EnginePool, obj: variant(engine, "drain-ten", (o) => (o.spec.drainGraceSeconds = 600)) },
  "an external-mode EnginePool": { kind: EnginePool, obj: variant(engine, "as-external", (o) => (o.spec.autoscaling = { mode: "external", minReplicas: 1, maxReplicas: 64 })) },
  "an app with both objectives": { kind: AgentApp, obj: variant(app, "slo", (o) => (o.spec.slo = { taskLatencyP90Ms: 8000, ttftP90Ms: 500 })) },
  "minimal app": { kind: AgentApp, obj: { apiVersion: API_VERSION, kind: "AgentApp", metadata: { name: "minimal" }, spec: { enginePool: { name: "e" } } } },
};

t.test("CRDs against a real kube-apiserver", async (t) => {
  const cp = await controlPlaneFor(t);
  const kc = cp.kubeConfig;
  const names = await installCrds(kc);
  t.same(names.sort(), ["agentapps.interlace.dev", "enginepools.interlace.dev", "inferencepools.inference.networking.k8s.io", "toolpools.interlace.dev"], "all three CRDs and the InferencePool CRD Established");
  t.equal((await kubeRequest(kc, "POST", "/api/v1/namespaces", { body: { metadata: { name: NS } } })).status, 201);

  t.test("discovery: short names, category, status subresource", async (t) => {
    const res = await kubeRequest(kc, "GET", `/apis/interlace.dev/v1alpha1`);
    const resources = (res.body as { resources: { name: string; shortNames?: string[]; categories?: string[]; namespaced: boolean }[] }).resources;
    for (const def of Object.values(InterlaceKinds)) {
      const r = resources.find((x) => x.name === def.plural);
      t.ok(r, `${def.plural} served`);
      t.same(r?.shortNames, def.shortNames, `${def.kind} short names`);
      t.same(r?.categories, ["interlace"], `${def.kind} in the interlace category`);
      t.ok(resources.some((x) => x.name === `${def.plural}/status`), `${def.kind} has a status subresource`);
      t.equal(resources.some((x) => x.name === `${def.plural}/scale`), def.scale !== undefined, `${def.kind} scale subresource as declared`);
    }
  });

  t.test("the samples are accepted and defaulted", async (t) => {
    for (const [def, obj] of [[EnginePool, engine], [ToolPool, tools], [AgentApp, app]] as const) {
      const res = await kubeRequest(kc, "POST", collection(def), { body: obj, query: { fieldValidation: "Strict" } });
      t.equal(res.status, 201, `${def.kind} sample created: ${messageOf(res.body)}`);
    }
    const ep = (await kubeRequest(kc, "GET", `${collection(EnginePool)}/qwen-small`)).body as any;
    t.equal(ep.spec.kvPolicy, "auto");
    t.equal(ep.spec.runtime.contextSize, 8192, "explicit value kept");
    t.equal(ep.spec.runtime.parallelSequences, 4);
    t.equal(ep.spec.drainGraceSeconds, 25, "the engine's own drain grace by default");
    const tp = (await kubeRequest(kc, "GET", `${collection(ToolPool)}/basic-tools`)).body as any;
    t.equal(tp.spec.tools[1].speculative, false, "speculative defaults to false");
    t.equal(tp.spec.tools[2].http.method, "POST", "HTTP method defaults to POST");
    const aa = (await kubeRequest(kc, "GET", `${collection(AgentApp)}/assistant`)).body as any;
    t.equal(aa.spec.objective, "latency");
    t.equal(aa.spec.tools, undefined, "no invented fields");
  });

  t.test("valid variants are accepted", async (t) => {
    for (const [name, c] of Object.entries(valid)) {
      const res = await kubeRequest(kc, "POST", collection(c.kind), { body: { apiVersion: API_VERSION, kind: c.kind.kind, ...c.obj }, query: { dryRun: "All", fieldValidation: "Strict" } });
      t.equal(res.status, 201, `${name}: ${messageOf(res.body)}`);
    }
  });

  t.test("autoscaling defaults are filled in", async (t) => {
    const obj = variant(tools, "as-defaults", (o) => (o.spec.autoscaling = { maxReplicas: 3 }));
    const res = await kubeRequest(kc, "POST", collection(ToolPool), { body: { apiVersion: API_VERSION, kind: "ToolPool", ...obj }, query: { dryRun: "All" } });
    t.equal(res.status, 201, messageOf(res.body));
    t.same((res.body as any).spec.autoscaling, { mode: "builtin", minReplicas: 1, maxReplicas: 3, scaleDownStabilizationSeconds: 300, idleSecondsBeforeZero: 600 });
  });

  t.test("invalid objects are rejected with the schema's message", async (t) => {
    for (const [name, c] of Object.entries(invalid)) {
      const query: Record<string, string> = { dryRun: "All" };
      if (c.strict === true) query["fieldValidation"] = "Strict";
      const res = await kubeRequest(kc, "POST", collection(c.kind), { body: { apiVersion: API_VERSION, kind: c.kind.kind, ...c.obj }, query });
      const msg = messageOf(res.body);
      t.equal(res.status, c.strict === true ? 400 : 422, `${name}: rejected as invalid`, { message: msg });
      for (const m of c.messages) t.match(msg, m, `${name}: says ${m}`);
    }
  });

  t.test("status subresource: spec writes ignore status, status writes are validated", async (t) => {
    const url = `${collection(EnginePool)}/qwen-small/status`;
    const status = {
      observedGeneration: 1,
      replicas: 1,
      readyReplicas: 1,
      endpoint: "http://qwen-small.crd-test.svc:8080",
      conditions: [{ type: "Ready", status: "True", reason: "Available", message: "1/1 replicas available", lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"), observedGeneration: 1 }],
    };
    const ok = await kubeRequest(kc, "PATCH", url, { body: { status }, contentType: "application/merge-patch+json" });
    t.equal(ok.status, 200, messageOf(ok.body));
    const bad = await kubeRequest(kc, "PATCH", url, {
      body: { status: { conditions: [{ ...status.conditions[0], status: "Maybe" }] } },
      contentType: "application/merge-patch+json",
    });
    t.equal(bad.status, 422);
    t.match(messageOf(bad.body), 'status.conditions[0].status: Unsupported value: "Maybe"');
    const spec = await kubeRequest(kc, "PATCH", `${collection(EnginePool)}/qwen-small`, {
      body: { spec: { replicas: 2 }, status: { readyReplicas: 0 } },
      contentType: "application/merge-patch+json",
    });
    const after = spec.body as any;
    t.equal(after.spec.replicas, 2, "spec changed");
    t.equal(after.metadata.generation, 2, "generation follows spec changes");
    t.equal(after.status.readyReplicas, 1, "status untouched by a main-resource write");
  });

  t.test("scale subresource (kubectl scale) goes through the schema", async (t) => {
    const url = `${collection(ToolPool)}/basic-tools/scale`;
    const scale = await kubeRequest(kc, "GET", url);
    t.equal(scale.status, 200);
    t.equal((scale.body as any).spec.replicas, 2);
    const up = await kubeRequest(kc, "PATCH", url, { body: { spec: { replicas: 5 } }, contentType: "application/merge-patch+json" });
    t.equal(up.status, 200, messageOf(up.body));
    t.equal(((await kubeRequest(kc, "GET", `${collection(ToolPool)}/basic-tools`)).body as any).spec.replicas, 5, "spec.replicas follows");
    const tooMany = await kubeRequest(kc, "PATCH", `${collection(EnginePool)}/qwen-small/scale`, { body: { spec: { replicas: 100 } }, contentType: "application/merge-patch+json" });
    t.equal(tooMany.status, 422);
    t.match(messageOf(tooMany.body), "less than or equal to 64");
    t.equal(((await kubeRequest(kc, "PATCH", url, { body: { spec: { replicas: 2 } }, contentType: "application/merge-patch+json" })).status), 200);
  });

  t.test("the InferencePool CRD (GAIE v1): the pool the operator writes is accepted, what the API forbids is not", async (t) => {
    const url = `/apis/${INFERENCE_GROUP}/${INFERENCE_VERSION}/namespaces/${NS}/inferencepools`;
    const exposed = { ...(engine as unknown as EnginePoolObject), metadata: { name: "qwen-small", namespace: NS, uid: "0b7c1a52-4a9e-4f1e-9d55-3c2f0e6b8a11" }, spec: { ...(engine as unknown as EnginePoolObject).spec, inferencePool: {} } };
    const pool = buildInferencePool(exposed);
    const ok = await kubeRequest(kc, "POST", url, { body: pool, query: { fieldValidation: "Strict" } });
    t.equal(ok.status, 201, messageOf(ok.body));
    const defaulted = await kubeRequest(kc, "POST", url, { body: { ...pool, metadata: { name: "defaults" }, spec: { selector: pool.spec.selector, targetPorts: [{ number: 8000 }], endpointPickerRef: { name: "epp", port: { number: 9002 } } } } });
    t.equal(defaulted.status, 201, messageOf(defaulted.body));
    t.match((defaulted.body as any).spec, { appProtocol: "http", endpointPickerRef: { group: "", kind: "Service", failureMode: "FailClose" } }, "v1 defaults filled in");
    const bad: Record<string, [unknown, string[]]> = {
      "duplicate ports": [{ ...pool.spec, targetPorts: [{ number: 8080 }, { number: 8080 }] }, ["port number must be unique"]],
      "no port": [{ ...pool.spec, targetPorts: [] }, ["spec.targetPorts"]],
      "port 0": [{ ...pool.spec, targetPorts: [{ number: 0 }] }, ["spec.targetPorts[0].number"]],
      "a Service picker without a port": [{ ...pool.spec, endpointPickerRef: { name: "epp" } }, ["port is required when kind is 'Service'"]],
      "an unknown failure mode": [{ ...pool.spec, endpointPickerRef: { ...pool.spec.endpointPickerRef, failureMode: "Sometimes" } }, ["spec.endpointPickerRef.failureMode: Unsupported value"]],
      "no selector labels": [{ ...pool.spec, selector: { matchLabels: {} } }, ["spec.selector.matchLabels"]],
    };
    for (const [name, [spec, messages]] of Object.entries(bad)) {
      const res = await kubeRequest(kc, "POST", url, { body: { ...pool, metadata: { name: "bad" }, spec }, query: { dryRun: "All" } });
      t.equal(res.status, 422, `${name}: rejected`);
      for (const m of messages) t.match(messageOf(res.body), m, `${name}: says ${m}`);
    }
  });

  t.test("printer columns (kubectl get)", async (t) => {
    const table = async (def: KindDefinition): Promise<{ columns: string[]; rows: unknown[][] }> => {
      const res = await kubeRequest(kc, "GET", collection(def), { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" });
      const body = res.body as { columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
      return { columns: body.columnDefinitions.map((c) => c.name), rows: body.rows.map((r) => r.cells) };
    };
    const ep = await table(EnginePool);
    t.same(ep.columns, ["Name", "Ready", "Desired", "Available", "Backend", "Adapters", "KV", "Endpoint", "Reason", "Age"]);
    const qwen = ep.rows.find((r) => r[0] === "qwen-small");
    t.same(qwen?.slice(0, 8), ["qwen-small", "True", 2, 1, "llama-cpp", null, "auto", "http://qwen-small.crd-test.svc:8080"]);
    const tuned = variant(engine, "tuned", (o) => (o.spec.model.adapters = [{ name: "cml", path: "/a.gguf" }, { name: "style", path: "/b.gguf", scale: 0.5 }]));
    t.equal((await kubeRequest(kc, "POST", collection(EnginePool), { body: tuned })).status, 201, "an EnginePool with adapters is accepted");
    const withAdapters = (await table(EnginePool)).rows.find((r) => r[0] === "tuned");
    t.match(String(withAdapters?.[5]), /cml/, "kubectl get shows the adapters");
    const tp = await table(ToolPool);
    t.same(tp.columns, ["Name", "Ready", "Desired", "Available", "Tools", "Subject", "Reason", "Age"]);
    t.same(tp.rows[0]?.slice(0, 3), ["basic-tools", null, 2], "no status yet: Ready is empty");
    const aa = await table(AgentApp);
    t.same(aa.columns.slice(0, 4), ["Name", "Ready", "Mode", "Engine"]);
    t.same(aa.rows[0]?.slice(0, 4), ["assistant", null, "async", "qwen-small"]);
  });
});
