/**
 * @module The CRD fields the operator parses, fuzzed (fast-check, fixed
 * seed) through its pure parsers and builders: the samples' EnginePools,
 * ToolPools and AgentApps with one value anywhere replaced (model and
 * adapter sources and URLs, autoscaling, inferencePool, runtime, semantic
 * function templates and outputs, tools), kept when the CRD's own schema
 * admits them (what kube-apiserver would store; its CEL rules are not run
 * here, so more gets through than a cluster admits). For each admitted
 * object: resolving an app gives a config or a status reason with a
 * message, never a throw; the builders never throw; the engine flags the
 * operator renders are read back by the engine's own option parser to the
 * same model and adapters; init-container termination messages (written
 * by the engine pod) become a model-check failure with a reason.
 */
import t, { type Test } from "tap";
import fc from "fast-check";
import { readFile } from "node:fs/promises";
import { parse } from "yaml";
import type { V1Pod } from "@kubernetes/client-node";
import { parseArgv } from "../../common/src/index.js";
import { compileSchema } from "../../common/src/protocol/index.js";
import type { JsonSchema } from "../../common/src/tools.js";
import { parseEnginePodOptions } from "../../engine-pod/src/config.js";
import { InterlaceKinds, type AgentApp, type EnginePool, type ToolPool } from "../../operator/src/api/index.js";
import { modelCheckFailure } from "../../operator/src/controllers/engine-pods.js";
import {
  buildEngineDeployment,
  buildEnginePdb,
  buildEngineService,
  buildInferencePool,
  buildPickerDeployment,
  buildToolRunnerDeployment,
  renderRunnerConfig,
  resolveAppConfig,
  type BuildOptions,
} from "../../operator/src/resources/index.js";
import { boundsOf } from "../../operator/src/autoscaling/stabilize.js";
import { hostileValue, paths, setAt } from "../helpers/fuzz-http.js";

const SEED = Number(process.env["FUZZ_SEED"] ?? 26);
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 1_500);
t.comment(`fuzz seed ${SEED}, ${RUNS} objects per kind (FUZZ_SEED / FUZZ_RUNS to change)`);
const build: BuildOptions = { image: "example/interlace:1", natsUrl: "nats://nats:4222", routerUrl: "http://router:8080", picker: { placement: "prefix", loadFactorPercent: 150, prefixSlack: 1, prefixWaitMs: 100, engineTtlMs: 5000, prefixWarmSessions: 3, prefixWarmWindowMs: 20_000, prefixWarmMinFreePercent: 50, appHomes: true } };

const sample = async <T>(file: string): Promise<T> => parse(await readFile(new URL(`../../samples/${file}`, import.meta.url), "utf8")) as T;
const meta = (name: string) => ({ name, namespace: "team", uid: `uid-${name}`, generation: 1 });

// Valid objects that between them set every field the builders branch on.
const enginePool = await sample<EnginePool>("enginepool.yaml");
enginePool.metadata = meta("qwen-small");
enginePool.spec = {
  ...enginePool.spec,
  model: {
    url: "https://example.com/m.gguf",
    sha256: "a".repeat(64),
    adapters: [
      { name: "cml", hostPath: "/srv/lora/cml.gguf" },
      { name: "style", url: "https://example.com/style.gguf", scale: 0.5 },
      { name: "shared", pvc: { claimName: "loras", path: "x/shared.gguf" } },
    ],
  },
  autoscaling: { minReplicas: 1, maxReplicas: 4 },
  inferencePool: { pickerReplicas: 1, failureMode: "FailClose" },
} as EnginePool["spec"];
const toolPool = await sample<ToolPool>("toolpool.yaml");
toolPool.metadata = meta(toolPool.metadata.name ?? "web");
const agentApp = await sample<AgentApp>("agentapp-reports.yaml");
agentApp.metadata = meta("reports");
agentApp.spec = { ...agentApp.spec, enginePool: { name: "qwen-small" }, toolPools: [{ name: toolPool.metadata.name ?? "web" }] };

/** OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` in the 2020-12 form the validator reads. */
function draft2020(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(draft2020);
  if (schema === null || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, draft2020(v)]));
  for (const [flag, bound] of [["exclusiveMinimum", "minimum"], ["exclusiveMaximum", "maximum"]] as const) {
    if (typeof out[flag] !== "boolean") continue;
    if (out[flag] === true) out[flag] = out[bound];
    else delete out[flag];
    if (out[flag] !== undefined) delete out[bound];
  }
  return out;
}

/** What kube-apiserver's structural check would say of a spec (the CRD's schema; its CEL rules are not run here). */
function admits(kind: keyof typeof InterlaceKinds): (spec: unknown) => boolean {
  const check = compileSchema(draft2020(InterlaceKinds[kind].spec) as JsonSchema, "spec");
  return (spec) => check(spec).ok;
}

/** The spec with one value anywhere in it replaced by a hostile one, removed, or a string near a real one. */
function mutated(spec: object): fc.Arbitrary<unknown> {
  const all = paths(spec).filter((p) => p.length > 0);
  const near = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.constantFrom("a,b", "x@0.5", "/srv/a b.gguf", "../../etc/passwd", "http://", "file:///etc/shadow", "https://h/x.gguf?a=1&b=@,", "{{input:}}", "{{output:x}}{{output:x}}", "{{", "}}", "{{input:a}}{{output:a}}", ""),
    fc.integer({ min: -2, max: 1_000_000 }),
    fc.double({ min: -1, max: 1e6, noNaN: true }),
  );
  return fc.oneof(
    fc.tuple(fc.constantFrom(...all), fc.oneof({ weight: 3, arbitrary: near }, { weight: 1, arbitrary: hostileValue })).map(([p, v]) => setAt(spec, p, v)),
    fc.constantFrom(...all).map((p) => setAt(spec, p, undefined)),
  );
}

/** Every string in the spec replaced, one at a time, by the separators and odd paths flags and lists are built from. */
function edges(spec: object): unknown[] {
  const strings = paths(spec).filter((p) => typeof p.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], spec) === "string");
  return strings.flatMap((p) => ["a,b.gguf", "/a,b.gguf", "a@0.5.gguf", "/a@2", "/a b/c.gguf", "--model", "/", "a=b"].map((v) => setAt(spec, p, v)));
}

/** Runs `check` on every admitted mutation (and edge); returns how many were admitted. Failures name the input. */
function fuzzKind<T>(t: Test, kind: keyof typeof InterlaceKinds, valid: { spec: object }, check: (obj: T) => void): void {
  const admitted = admits(kind);
  t.ok(admitted(valid.spec), `the valid ${kind} is admitted by its CRD schema`);
  let n = 0;
  const problems: string[] = [];
  for (const spec of [...edges(valid.spec), ...fc.sample(mutated(valid.spec), { numRuns: RUNS, seed: SEED })]) {
    const clean = JSON.parse(JSON.stringify(spec)) as object;
    if (!admitted(clean)) continue;
    n++;
    try {
      check({ ...valid, spec: clean } as T);
    } catch (err) {
      const message = (err as Error).message;
      if (!problems.some((p) => p.startsWith(message.slice(0, 40)))) problems.push(`${message} for spec ${JSON.stringify(clean).slice(0, 400)}`);
    }
  }
  t.same(problems.slice(0, 5), [], `${kind}: ${n} of ${RUNS} fuzzed specs (and edges) admitted by the schema, each handled without a throw`);
  t.ok(n > RUNS / 10, `enough admitted ${kind}s to mean something (${n})`);
}

t.test("EnginePool: builders never throw; the engine reads back the model and adapters the operator rendered", async (t) => {
  fuzzKind<EnginePool>(t, "EnginePool", enginePool, (pool) => {
    const dep = buildEngineDeployment(pool, build);
    buildEngineService(pool);
    buildEnginePdb(pool);
    if (pool.spec.inferencePool !== undefined) {
      buildInferencePool(pool);
      buildPickerDeployment(pool, build);
    }
    if (pool.spec.autoscaling !== undefined) boundsOf(pool.spec.autoscaling);
    const c = dep.spec?.template.spec?.containers[0];
    if (c === undefined) throw new Error("no engine container");
    // The CRD's CEL rule refuses a llama-cpp pool without a model; the flags are read back only for what a cluster admits.
    if (pool.spec.model === undefined && pool.spec.runtime?.backend !== "openai") return;
    const args = (c.args ?? []).map((a) => (a === "$(POD_NAME)" ? "p" : a));
    const parsed = parseEnginePodOptions({ flags: parseArgv(args), env: {} });
    const arg = (flag: string): string | undefined => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
    const adapters = pool.spec.model?.adapters ?? [];
    const read = parsed.engine.adapters ?? [];
    if (pool.spec.runtime?.backend !== "openai" && read.length !== adapters.length) {
      throw new Error(`${adapters.length} adapters in the spec, the engine reads ${read.length} from --adapters ${arg("--adapters")}`);
    }
    for (const [i, a] of adapters.entries()) {
      if (read[i]?.scale !== (a.scale ?? 1)) throw new Error(`adapter ${a.name}: scale ${a.scale ?? 1} read back as ${read[i]?.scale}`);
    }
  });
});

t.test("ToolPool: the runner config renders or names why not; the runner Deployment builds", async (t) => {
  fuzzKind<ToolPool>(t, "ToolPool", toolPool, (pool) => {
    const r = renderRunnerConfig(pool);
    if (!r.ok) {
      if (typeof r.message !== "string" || r.message === "") throw new Error("a refusal without a message");
      return;
    }
    buildToolRunnerDeployment(pool, r.config, build);
  });
});

t.test("AgentApp: a config or a status reason with a message, never a throw", async (t) => {
  const pools = new Map([[toolPool.metadata.name ?? "web", toolPool]]);
  fuzzKind<AgentApp>(t, "AgentApp", agentApp, (app) => {
    const r = resolveAppConfig(app, enginePool, pools);
    if (!r.ok && (typeof r.reason !== "string" || typeof r.message !== "string" || r.message === "")) throw new Error(`a refusal without a reason: ${JSON.stringify(r)}`);
  });
});

t.test("model-check termination messages (written by the engine pod) become a failure with a reason", async (t) => {
  const pod = (message: string): V1Pod => ({
    metadata: { name: "e-1" },
    status: { initContainerStatuses: [{ name: "check-model", image: "i", imageID: "", ready: false, restartCount: 1, lastState: { terminated: { exitCode: 1, message } } }] },
  });
  let n = 0;
  for (const message of fc.sample(fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "binary", maxLength: 100 }), fc.constantFrom("ModelInvalid:", "AdapterMissing: x", "constructor: x", "__proto__: y", "")), { numRuns: 300, seed: SEED })) {
    const f = modelCheckFailure([pod(message)]);
    if (f === undefined || typeof f.reason !== "string" || (f.reason as string) === "" || typeof f.message !== "string") t.fail(`no reason for ${JSON.stringify(message)}: ${JSON.stringify(f)}`);
    n++;
  }
  t.pass(`${n} fuzzed termination messages, each a failure with a reason`);
});
