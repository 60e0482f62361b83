/**
 * @module The chart's Grafana dashboard against what the components really
 * export. The real helm renders the dashboard ConfigMap; every PromQL query in
 * it (panel targets and query variables) must reference only metric names
 * that a real engine pod, tool runner, router and operator expose (their `/metrics`
 * text and what a real Prometheus scraped from them), must be accepted by that
 * Prometheus, and — where the scenario produced samples for all its metrics —
 * must return series for the namespace the targets carry. The optional
 * ServiceMonitor must select a Service for every component the dashboard
 * reads.
 */
import t from "tap";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { kubeRequest } from "../../hack/control-plane.js";
import { SessionClient, type CreateSessionRequest, type SessionEvent } from "../../common/src/index.js";
import { APP, NAMESPACE, runSession, sessionRequest, startObservedStack } from "./observed-stack.js";
import { allSelections, CHART, dashboardQueries, expandVariables, renderChart, renderedDashboards, type RenderedDashboard } from "./dashboard-queries.js";
import { exposedMetricNames, promqlMetricNames } from "./promql-names.js";

const { prom, engineBase, pool, kube, routerBase } = await startObservedStack(t, { operator: true, router: true });

/** Which component exports a metric, by name prefix. */
function componentOf(metric: string): string | undefined {
  if (metric.startsWith("interlace_engine_") || metric.startsWith("interlace_executor_")) return "engine";
  if (metric.startsWith("interlace_toolrunner_")) return "toolrunner";
  if (metric.startsWith("interlace_operator_") || metric.startsWith("interlace_autoscaler_")) return "operator";
  if (metric.startsWith("interlace_router_")) return "router";
  return undefined;
}

let dashboards: RenderedDashboard[] = [];

t.test("the chart renders each dashboard into a ConfigMap for the Grafana sidecar", async (t) => {
  dashboards = renderedDashboards(renderChart());
  t.ok(dashboards.length >= 1, `dashboards found: ${dashboards.map((d) => d.file).join(", ")}`);
  for (const d of dashboards) {
    t.equal(d.labels["grafana_dashboard"], "1", `${d.configMap} carries the sidecar label`);
    t.same(d.json, JSON.parse(readFileSync(join(CHART, "dashboards", d.file.split("/").pop()!), "utf8")), `${d.configMap} embeds ${d.file} unchanged`);
    t.ok(typeof d.json.uid === "string" && d.json.uid !== "", `${d.file} has a uid`);
    t.ok(dashboardQueries(d.json).length > 0, `${d.file} has queries`);
  }
  t.same(renderedDashboards(renderChart(["dashboards.enabled=false"])), [], "dashboards.enabled=false renders none");
});

t.test("the checks below can fail: a made-up metric and a PromQL syntax error are caught", async (t) => {
  t.same(promqlMetricNames('sum by (le) (rate(interlace_engine_no_such_seconds_bucket{namespace=~"x"}[1m])) / on(pod) group_left interlace_engine_max_sessions'), [
    "interlace_engine_max_sessions",
    "interlace_engine_no_such_seconds_bucket",
  ]);
  t.same(promqlMetricNames('histogram_quantile(0.95, sum without (instance) (rate({__name__="a_bucket"}[5m] offset 1m))) > bool 1e3'), ["a_bucket"]);
  const broken = await prom.query("sum(rate(interlace_engine_tokens_decoded_total[1m])");
  t.equal(broken.ok, false, "Prometheus rejects unbalanced parentheses");
  const unexpanded = await prom.query(expandVariables('rate(interlace_engine_sessions_total{namespace=~"$namespace"}[$__rate_interval])', {}));
  t.same(unexpanded.ok, true, "an unknown variable stays in a label value (harmless there)");
  const badRange = await prom.query(expandVariables("rate(interlace_engine_sessions_total[$unknown])", {}));
  t.equal(badRange.ok, false, "an unknown variable in a range is rejected");
});

t.test("every dashboard query references exported metrics, parses, and returns series", async (t) => {
  // Traffic first, so the engine's and the runner's labelled series exist.
  const events = await runSession(engineBase, sessionRequest(pool));
  t.equal(events[events.length - 1]?.type, "done", "a session ran");
  // And one through the router (the app brings the tools), so placement and prefix series exist.
  const { tools: _tools, ...body } = sessionRequest(pool);
  const client = SessionClient.forApp(routerBase!, APP.namespace, APP.name);
  const { id } = await client.create(body as CreateSessionRequest);
  const routed: SessionEvent[] = [];
  for await (const e of client.events(id)) routed.push(e);
  t.equal(routed[routed.length - 1]?.type, "done", "a session ran through the router");
  await prom.waitForQuery("sum(interlace_router_placements_total)", (s) => (s[0]?.value ?? 0) >= 1);
  await prom.waitForQuery("sum(interlace_toolrunner_calls_total)", (s) => (s[0]?.value ?? 0) >= 3);
  await prom.waitForQuery("sum(interlace_engine_ttft_seconds_count)", (s) => (s[0]?.value ?? 0) >= 1);
  await prom.waitForQuery("sum(interlace_operator_reconcile_total)", (s) => (s[0]?.value ?? 0) >= 1);

  // Exported = declared in a component's /metrics text (labelled metrics with no sample yet included) or scraped by Prometheus.
  const exported = new Set<string>();
  for (const target of await prom.targets()) for (const name of exposedMetricNames(await (await fetch(target.scrapeUrl)).text())) exported.add(name);
  const withSamples = new Set(await prom.metricNames());
  for (const name of withSamples) exported.add(name);
  t.ok([...exported].some((n) => n.startsWith("interlace_operator_")), "the operator's metrics are among them");

  const missing: string[] = [];
  const noData: string[] = [];
  for (const d of dashboards) {
    const all = allSelections(d.json);
    const selected = { ...all, namespace: [NAMESPACE] };
    for (const q of dashboardQueries(d.json)) {
      const names = promqlMetricNames(expandVariables(q.promql, all));
      t.ok(names.length > 0, `${d.file} ${q.where}: selects a metric: ${q.raw}`);
      for (const name of names) {
        const ok = exported.has(name);
        if (!ok) missing.push(`${d.file} | ${q.where} | ${q.raw} | missing: ${name}`);
        t.ok(ok, `${d.file} ${q.where}: ${name} is exported`, ok ? {} : { expression: q.raw, exportedLike: [...exported].filter((e) => e.startsWith(name.split("_").slice(0, 3).join("_"))).sort() });
      }
      let accepted = true;
      for (const [label, values] of [["All", all], [NAMESPACE, selected]] as const) {
        const r = await prom.query(expandVariables(q.promql, values));
        accepted &&= r.ok;
        t.ok(r.ok, `${d.file} ${q.where} (namespace ${label}): Prometheus accepts it`, r.ok ? {} : { expression: q.raw, error: r.error });
      }
      if (!accepted) continue;
      if (names.length > 0 && names.every((n) => withSamples.has(n))) {
        const expr = expandVariables(q.promql, selected);
        try {
          await prom.waitForQuery(expr, (s) => s.length > 0, 15_000);
          t.pass(`${d.file} ${q.where}: returns series for namespace ${NAMESPACE}`);
        } catch (err) {
          t.fail(`${d.file} ${q.where}: no series for namespace ${NAMESPACE}`, { expression: expr, error: String(err) });
        }
      } else {
        noData.push(`${q.where}: ${names.filter((n) => !withSamples.has(n)).join(", ")}`);
      }
    }
  }
  if (noData.length > 0) t.comment(`no samples in this scenario (declared, not observed): ${noData.join("; ")}`);
  if (missing.length > 0) t.comment(`dashboard queries referencing metrics nobody exports:\n${missing.join("\n")}`);
  const ns = await prom.samples(expandVariables("group by (namespace) (interlace_engine_ttft_seconds_count)", {}));
  t.ok(
    ns.some((s) => s.metric["namespace"] === NAMESPACE),
    "the namespace variable's query offers the targets' namespace",
  );
});

t.test("the ServiceMonitor selects a Service for every component the dashboard reads", async (t) => {
  const docs = renderChart(["serviceMonitor.enabled=true"]);
  const sm = docs.find((d) => d["kind"] === "ServiceMonitor") as
    | { spec: { selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }; endpoints: { port?: string; path?: string }[]; namespaceSelector?: { any?: boolean } } }
    | undefined;
  if (sm === undefined) return t.fail("no ServiceMonitor rendered with serviceMonitor.enabled=true");
  const selector = sm.spec.selector;
  const selects = (labels: Record<string, string>): boolean =>
    Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
    (selector.matchExpressions ?? []).every((e) => {
      const has = Object.hasOwn(labels, e.key);
      if (e.operator === "In") return has && (e.values ?? []).includes(labels[e.key]!);
      if (e.operator === "NotIn") return !has || !(e.values ?? []).includes(labels[e.key]!);
      if (e.operator === "Exists") return has;
      if (e.operator === "DoesNotExist") return !has;
      return false;
    });
  const ports = new Set(sm.spec.endpoints.map((e) => e.port));

  // Services: the chart's own, and those the real operator created for the sample pools.
  type Service = { metadata: { name: string; namespace?: string; labels?: Record<string, string> }; spec: { ports?: { name?: string }[] } };
  const chartServices = docs.filter((d) => d["kind"] === "Service") as unknown as Service[];
  let clusterServices: Service[] = [];
  const until = Date.now() + 20_000;
  // The operator reconciles the sample EnginePool and ToolPool into Deployments and Services; wait for both Services.
  const reconciled = (component: string): boolean => clusterServices.some((s) => s.metadata.labels?.["app.kubernetes.io/component"] === component);
  while (Date.now() < until) {
    clusterServices = ((await kubeRequest(kube!, "GET", "/api/v1/services")).body as { items: Service[] }).items;
    if (reconciled("engine") && reconciled("toolrunner")) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const services = [...chartServices, ...clusterServices];
  const scraped = services.filter((s) => selects(s.metadata.labels ?? {}) && (s.spec.ports ?? []).some((p) => ports.has(p.name)));

  const components = new Set<string>();
  for (const d of dashboards) for (const q of dashboardQueries(d.json)) for (const n of promqlMetricNames(expandVariables(q.promql, allSelections(d.json)))) {
    const c = componentOf(n);
    if (c !== undefined) components.add(c);
  }
  t.ok(components.size > 0, `components read by the dashboard: ${[...components].join(", ")}`);
  for (const component of [...components].sort()) {
    const found = scraped.filter((s) => s.metadata.labels?.["app.kubernetes.io/component"] === component);
    t.ok(found.length > 0, `a Service with component=${component} is selected by the ServiceMonitor (port ${[...ports].join(",")})`, {
      selected: scraped.map((s) => `${s.metadata.namespace ?? "(chart)"}/${s.metadata.name} component=${s.metadata.labels?.["app.kubernetes.io/component"]}`),
      allServices: services.map((s) => `${s.metadata.namespace ?? "(chart)"}/${s.metadata.name} component=${s.metadata.labels?.["app.kubernetes.io/component"] ?? "-"}`),
    });
  }
});
