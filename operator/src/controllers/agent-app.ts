/**
 * @module The AgentApp reconciler: resolves the app's EnginePool and
 * ToolPools from the caches (a missing one is a Degraded condition with its
 * reason, not an error — the pool's arrival re-queues the app), reads the
 * Secrets its `spec.auth` names into key identities (a missing Secret or key
 * is a Degraded reason and the app is withdrawn from the routers: no key
 * may use it), renders the
 * app config (a ConfigMap for people, the `interlace-apps` KV entry the
 * routers watch) and reports the endpoint. Ready once every referenced pool
 * is Ready and — when NATS is observed — a router serves the current config
 * and the EnginePool has a ready engine; `activeSessions` is the routers'
 * live count, read again every few seconds.
 */
import { AgentAppKind, ConditionType, Reason, type AgentApp, type AgentAppStatus, type EnginePool, type ToolPool } from "../api/index.js";
import type { V1Secret } from "@kubernetes/client-node";
import type { AppAuth } from "../../../common/src/protocol/index.js";
import { DEFAULT_KEY_GRACE_MS } from "../../../common/src/security/key-ring.js";
import { appConfigMapName, appEndpoint, buildAppConfigMap, resolveAppConfig, resolveAppKeys, type ResolveResult } from "../resources/index.js";
import { CoreTypes, type Informer, type ReconcileRequest, type ReconcileResult, type Reconciler } from "../runtime/index.js";
import { applyChild, type ReconcilerContext } from "./context.js";
import { degradedConditions, isReady, mergeConditions, writeStatusIfChanged, type ConditionInput } from "./status.js";
import { unobservedLiveState } from "./live-state.js";
import { recordTransitions } from "./transitions.js";

const STATUS_KEYS = ["observedGeneration", "endpoint", "configMap", "toolCount", "activeSessions", "conditions"] as const;
/** How often an observed app's live figures (routers, engines, sessions) are read again. */
export const LIVE_REFRESH_MS = 5_000;

/** Keys of the AgentApps that reference an EnginePool (for the watch mapping). */
export function appsUsingEnginePool(apps: Informer<AgentApp>, pool: { metadata?: { namespace?: string; name?: string } }): string[] {
  const ns = pool.metadata?.namespace;
  return apps
    .list(ns)
    .filter((a) => a.spec.enginePool.name === pool.metadata?.name)
    .map((a) => `${ns}/${a.metadata.name ?? ""}`);
}

/** Keys of the AgentApps that reference a ToolPool. */
export function appsUsingToolPool(apps: Informer<AgentApp>, pool: { metadata?: { namespace?: string; name?: string } }): string[] {
  const ns = pool.metadata?.namespace;
  return apps
    .list(ns)
    .filter((a) => (a.spec.toolPools ?? []).some((r) => r.name === pool.metadata?.name))
    .map((a) => `${ns}/${a.metadata.name ?? ""}`);
}

/** Reconciles AgentApps into rendered app configs. */
export class AgentAppReconciler implements Reconciler {
  /**
   * The key identities last published per app (`<ns>/<name>`): what a changed
   * key's old digest is read from (at start, the app's entry in the bucket).
   */
  private readonly published = new Map<string, AppAuth>();

  constructor(
    private readonly ctx: ReconcilerContext,
    private readonly apps: Informer<AgentApp>,
    private readonly enginePools: Informer<EnginePool>,
    private readonly toolPools: Informer<ToolPool>,
  ) {}

  async reconcile(req: ReconcileRequest): Promise<ReconcileResult> {
    const live = this.ctx.live ?? unobservedLiveState;
    const app = this.apps.get(req.namespace, req.name);
    const appId = `${req.namespace}/${req.name}`;
    if (!app || app.metadata.deletionTimestamp) {
      this.published.delete(appId);
      // The routers stop serving it (owner references delete the ConfigMap).
      await live.withdrawApp(req.namespace, req.name);
      return {};
    }
    const { client, build } = this.ctx;
    const enginePool = this.enginePools.get(req.namespace, app.spec.enginePool.name);
    const toolPools = new Map<string, ToolPool>();
    for (const ref of app.spec.toolPools ?? []) {
      const tp = this.toolPools.get(req.namespace, ref.name);
      if (tp && !tp.metadata.deletionTimestamp) toolPools.set(ref.name, tp);
    }
    // Keys first: an app whose keys cannot be read is withdrawn from the routers (fail closed), whatever else holds.
    // What was published before: remembered, else read back from the bucket (an operator restart or a new leader keeps a rotation's window).
    const publishedAuth = this.published.get(appId) ?? (app.spec.auth !== undefined ? await live.publishedAuth(req.namespace, req.name).catch(() => undefined) : undefined);
    const rotation = { graceMs: this.ctx.keyGraceMs ?? DEFAULT_KEY_GRACE_MS, now: (this.ctx.now?.() ?? new Date()).getTime(), ...(publishedAuth !== undefined ? { before: publishedAuth } : {}) };
    const keys = app.spec.auth !== undefined ? resolveAppKeys(app, await this.keySecrets(app), rotation) : undefined;
    // A key that cannot be read revokes every value of the app's keys, previous ones included.
    if (keys?.ok === true) this.published.set(appId, keys.auth);
    else this.published.delete(appId);
    if (keys?.ok === false) await live.withdrawApp(req.namespace, req.name);
    const pools = resolveAppConfig(app, enginePool, toolPools);
    const resolved: ResolveResult = keys?.ok === false ? keys : pools.ok && keys !== undefined ? { ok: true, config: { ...pools.config, auth: keys.auth } } : pools;
    let conditions: ConditionInput[];
    let failure: unknown = null;
    const status: AgentAppStatus = {
      ...(app.metadata.generation !== undefined ? { observedGeneration: app.metadata.generation } : {}),
    };
    if (!resolved.ok) {
      conditions = degradedConditions(resolved.reason, resolved.message);
    } else {
      try {
        await applyChild(client, CoreTypes.ConfigMap, buildAppConfigMap(app, resolved.config));
        await live.publishApp(resolved.config);
        status.endpoint = appEndpoint(app, build.routerUrl);
        status.configMap = appConfigMapName(app);
        status.toolCount = resolved.config.tools.length;
        const notReady = [
          ...(isReady(enginePool) ? [] : [`EnginePool ${app.spec.enginePool.name}`]),
          ...[...toolPools.entries()].filter(([, tp]) => !isReady(tp)).map(([n]) => `ToolPool ${n}`),
        ];
        let served = "";
        let waiting: { reason: string; message: string } | null = null;
        if (live.observed) {
          const [appLive, engines] = await Promise.all([live.app(resolved.config), live.readyEngines(req.namespace, app.spec.enginePool.name)]);
          status.activeSessions = appLive.activeSessions;
          if (appLive.routers === 0) waiting = { reason: Reason.RouterNotServing, message: "no router serves the current app config yet" };
          else if (engines === 0) waiting = { reason: Reason.NoReadyEngine, message: `EnginePool ${app.spec.enginePool.name} has no ready engine (no fresh heartbeat)` };
          served = ` (${appLive.routers} router(s), ${engines} ready engine(s))`;
        }
        conditions =
          notReady.length > 0
            ? [
                { type: ConditionType.Ready, status: "False", reason: Reason.DependenciesNotReady, message: `not ready: ${notReady.join(", ")}` },
                { type: ConditionType.Progressing, status: "True", reason: Reason.RolloutInProgress, message: "waiting for referenced pools" },
                { type: ConditionType.Degraded, status: "False", reason: Reason.AsExpected, message: "" },
              ]
            : waiting !== null
              ? [
                  { type: ConditionType.Ready, status: "False", reason: waiting.reason, message: waiting.message },
                  { type: ConditionType.Progressing, status: "True", reason: Reason.RolloutInProgress, message: "the app config is published to the routers" },
                  { type: ConditionType.Degraded, status: "False", reason: Reason.AsExpected, message: "" },
                ]
              : [
                  {
                    type: ConditionType.Ready,
                    status: "True",
                    reason: Reason.Available,
                    message: live.observed ? `serving at ${status.endpoint}${served}` : `config rendered for ${status.endpoint} (routers not observed: the operator has no --nats-url)`,
                  },
                  { type: ConditionType.Progressing, status: "False", reason: Reason.RolloutComplete, message: "the app config is rendered" },
                  { type: ConditionType.Degraded, status: "False", reason: Reason.AsExpected, message: "" },
                ];
      } catch (err) {
        failure = err;
        conditions = degradedConditions(Reason.ApplyFailed, `applying the app config failed: ${(err as Error).message}`);
      }
    }
    status.conditions = mergeConditions(app.status?.conditions, conditions, app.metadata.generation, this.ctx.now?.() ?? new Date());
    const before = app.status?.conditions;
    if (await writeStatusIfChanged(client, AgentAppKind, app, status as Record<string, unknown>, STATUS_KEYS)) {
      await recordTransitions(this.ctx.recorder, app, before, status.conditions);
    }
    if (failure) throw failure;
    // Secrets are read, not watched (the operator may only get them): a rotated key is published within a refresh.
    return live.observed || app.spec.auth !== undefined ? { requeueAfterMs: LIVE_REFRESH_MS } : {};
  }

  /** The Secrets `spec.auth` names, by name (null: not found). */
  private async keySecrets(app: AgentApp): Promise<Map<string, V1Secret | null>> {
    const secrets = new Map<string, V1Secret | null>();
    for (const ref of app.spec.auth?.apiKeySecrets ?? []) {
      if (!secrets.has(ref.name)) secrets.set(ref.name, await this.ctx.client.get<V1Secret>(CoreTypes.Secret, app.metadata.namespace ?? "default", ref.name));
    }
    return secrets;
  }
}
