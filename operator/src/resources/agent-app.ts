/**
 * @module AgentApp → the rendered app config (a ConfigMap) that the router
 * and the engines read: the EnginePool by name, the tools the app
 * may call (each tagged with the pool that runs it), prompt, few-shot
 * examples and the behaviour settings, with defaults filled in. Resolving
 * references is a pure function returning either a config or the Degraded
 * reason the reconciler reports.
 */
import type { V1ConfigMap } from "@kubernetes/client-node";
import type { ChatMessage, SessionSpeculation, ToolSpec } from "../../../common/src/index.js";
import { checkSemanticFunction, parseTemplate, templateOutputs, type SemanticFunction } from "../../../common/src/semantic-function.js";
import type { AppConfig } from "../../../common/src/protocol/index.js";
import { Reason, type AgentApp, type EnginePool, type ToolPool } from "../api/index.js";
import { childMeta } from "./common.js";
import { toolSpecOf } from "./tool-pool.js";

export const APP_CONFIG_COMPONENT = "app-config";
/** The ConfigMap key holding the JSON app config. */
export const APP_CONFIG_KEY = "app.json";

/** What the router and engines read for one AgentApp (the type lives in the shared protocol module). */
export type { AppConfig };

/** A resolved config, or the Degraded reason and message. */
export type ResolveResult = { ok: true; config: AppConfig } | { ok: false; reason: string; message: string };

export function appConfigMapName(app: AgentApp): string {
  return `${app.metadata.name ?? ""}-app-config`;
}

/** Where clients open sessions for this app. */
export function appEndpoint(app: AgentApp, routerUrl: string): string {
  return `${routerUrl.replace(/\/$/, "")}/v1/apps/${app.metadata.namespace ?? "default"}/${app.metadata.name ?? ""}`;
}

/**
 * Resolves the app's references against the pools that exist (callers pass
 * what their caches hold, `undefined` for a missing object).
 */
export function resolveAppConfig(
  app: AgentApp,
  enginePool: EnginePool | undefined,
  toolPools: ReadonlyMap<string, ToolPool>,
): ResolveResult {
  const namespace = app.metadata.namespace ?? "default";
  if (!enginePool) {
    return { ok: false, reason: Reason.EnginePoolNotFound, message: `EnginePool ${namespace}/${app.spec.enginePool.name} not found` };
  }
  if ((app.spec.callingMode ?? "async") === "async" && enginePool.spec.runtime.backend === "openai") {
    return {
      ok: false,
      reason: Reason.ModeUnsupportedByBackend,
      message: `callingMode async needs Interlace's own engine: EnginePool ${namespace}/${enginePool.metadata?.name ?? ""} fronts an upstream OpenAI-compatible server (backend openai), which cannot take interrupts into a live sequence; use sync or syncParallel`,
    };
  }
  const tools: ToolSpec[] = [];
  const seen = new Map<string, string>();
  for (const ref of app.spec.toolPools ?? []) {
    const pool = toolPools.get(ref.name);
    if (!pool) return { ok: false, reason: Reason.ToolPoolNotFound, message: `ToolPool ${namespace}/${ref.name} not found` };
    const byName = new Map(pool.spec.tools.map((t) => [t.name, t]));
    for (const wanted of ref.tools ?? []) {
      if (!byName.has(wanted)) return { ok: false, reason: Reason.ToolNotFound, message: `tool ${wanted} is not defined by ToolPool ${ref.name}` };
    }
    const selected = ref.tools ? ref.tools.map((n) => byName.get(n)!) : pool.spec.tools;
    for (const t of selected) {
      const other = seen.get(t.name);
      if (other !== undefined) {
        return { ok: false, reason: Reason.InvalidSpec, message: `tool ${t.name} is defined by both ToolPool ${other} and ToolPool ${ref.name}` };
      }
      seen.set(t.name, ref.name);
      tools.push({ ...toolSpecOf(t), pool: { namespace, name: ref.name } });
    }
  }
  const mode = app.spec.callingMode ?? "async";
  const spec = app.spec.speculation;
  const refs = new Set((app.spec.toolPools ?? []).map((r) => r.name));
  for (const name of spec?.pools ?? []) {
    if (!refs.has(name)) return { ok: false, reason: Reason.InvalidSpec, message: `speculation.pools names ToolPool ${name}, which is not among spec.toolPools` };
  }
  const maxTokens = app.spec.maxTokens ?? 1024;
  const functions: SemanticFunction[] = [];
  for (const [i, fn] of (app.spec.semanticFunctions ?? []).entries()) {
    // The CRD's CEL rules catch most of this at admission; these checks name the field for what CEL cannot see.
    const problem = checkSemanticFunction(fn, `spec.semanticFunctions[${i}]`);
    if (problem !== null) return { ok: false, reason: Reason.InvalidSpec, message: problem };
    const declared = new Map(fn.outputs.map((o) => [o.name, o]));
    functions.push({
      name: fn.name,
      template: fn.template,
      outputs: templateOutputOrder(fn.template).map((name) => ({
        name,
        maxTokens: Math.min(declared.get(name)?.maxTokens ?? 128, maxTokens),
        temperature: declared.get(name)?.temperature ?? 0,
      })),
      tools: fn.tools ?? false,
    });
  }
  return {
    ok: true,
    config: {
      namespace,
      name: app.metadata.name ?? "",
      enginePool: { name: app.spec.enginePool.name },
      systemPrompt: app.spec.systemPrompt ?? "",
      fewShot: app.spec.fewShot ?? [],
      callingMode: mode,
      objective: app.spec.objective ?? "latency",
      interrupts: {
        userInterrupts: app.spec.interrupts?.userInterrupts ?? mode === "async",
        maxQueued: app.spec.interrupts?.maxQueued ?? 64,
      },
      speculation: {
        enabled: spec?.enabled ?? false,
        lambda: spec?.lambda ?? 1,
        maxInFlight: spec?.maxInFlight ?? 2,
        engineSide: spec?.engineSide ?? true,
        ...(spec?.pools !== undefined ? { pools: spec.pools.map((p) => `${namespace}/${p}`) } : {}),
      },
      ...(app.spec.kvRetention !== undefined ? { retention: { ...app.spec.kvRetention } } : {}),
      semanticFunctions: functions,
      maxTokens,
      tools,
    },
  };
}

/** The ConfigMap with the rendered config (stable JSON: same input, same bytes, no spurious applies). */
export function buildAppConfigMap(app: AgentApp, config: AppConfig): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: childMeta(app, appConfigMapName(app), APP_CONFIG_COMPONENT),
    // Key ids only: the ConfigMap is for people, and key digests have no reader there.
    data: { [APP_CONFIG_KEY]: JSON.stringify(config.auth !== undefined ? { ...config, auth: { keys: config.auth.keys.map((k) => ({ id: k.id })) } } : config, null, 2) },
  };
}

/** A template's outputs in the order they are generated. */
function templateOutputOrder(template: string): string[] {
  return templateOutputs(parseTemplate(template));
}
