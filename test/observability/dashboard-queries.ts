/**
 * @module The Grafana dashboards the chart ships, as the real helm renders
 * them, and every PromQL query in them: panel targets (rows' nested panels
 * included) and query variables (`label_values(metric, label)` becomes
 * `group by (label) (metric)`, `query_result(expr)` its expression). Grafana
 * variables are substituted the way Grafana would before a query reaches
 * Prometheus.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The chart; `INTERLACE_OBS_CHART` points the dashboard test at another copy (to check a change before it lands). */
export const CHART = process.env["INTERLACE_OBS_CHART"] ?? join(ROOT, "charts/interlace");

/** The cached helm binary (built by `hack/tools/40-helm.sh` when missing). */
export function helmBinary(): string {
  const bin = join(process.env["INTERLACE_BIN"] ?? join(ROOT, ".cache/bin"), "helm");
  if (!existsSync(bin)) {
    const r = spawnSync("bash", [join(ROOT, "hack/tools/40-helm.sh")], { stdio: "inherit" });
    if (r.status !== 0 || !existsSync(bin)) throw new Error(`helm is not installed and hack/tools/40-helm.sh failed (exit ${r.status})`);
  }
  return bin;
}

/** `helm template` of the chart with `--set` values; the parsed documents. */
export function renderChart(sets: string[] = []): Record<string, unknown>[] {
  const out = execFileSync(helmBinary(), ["template", "obs", CHART, "--namespace", "interlace-system", ...sets.flatMap((s) => ["--set", s])], {
    maxBuffer: 32 << 20,
    env: { ...process.env, HELM_CACHE_HOME: "/tmp/interlace-helm/cache", HELM_CONFIG_HOME: "/tmp/interlace-helm/config", HELM_DATA_HOME: "/tmp/interlace-helm/data" },
  }).toString();
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Record<string, unknown> | null)
    .filter((d): d is Record<string, unknown> => d !== null);
}

/** A dashboard found in a rendered ConfigMap. */
export interface RenderedDashboard {
  /** `charts/interlace/dashboards/<key>` (the file the ConfigMap template embeds). */
  file: string;
  configMap: string;
  labels: Record<string, string>;
  json: Dashboard;
}

export interface Dashboard {
  title?: string;
  uid?: string;
  panels?: Panel[];
  templating?: { list?: Variable[] };
}

interface Panel {
  id?: number;
  title?: string;
  type?: string;
  panels?: Panel[];
  targets?: { expr?: string; refId?: string; hide?: boolean }[];
}

interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
  allValue?: string;
  options?: { value: string }[];
  current?: { value?: string | string[] };
}

/** Every ConfigMap with a `*.json` data key in the rendered chart, parsed. */
export function renderedDashboards(docs: Record<string, unknown>[]): RenderedDashboard[] {
  const found: RenderedDashboard[] = [];
  for (const doc of docs) {
    if (doc["kind"] !== "ConfigMap") continue;
    const meta = doc["metadata"] as { name: string; labels?: Record<string, string> };
    for (const [key, value] of Object.entries((doc["data"] ?? {}) as Record<string, string>)) {
      if (!key.endsWith(".json")) continue;
      found.push({ file: `charts/interlace/dashboards/${key}`, configMap: meta.name, labels: meta.labels ?? {}, json: JSON.parse(value) as Dashboard });
    }
  }
  return found;
}

/** One query of a dashboard, with where it is. */
export interface DashboardQuery {
  /** e.g. `panel "Sessions" (id 4) target A` or `variable namespace`. */
  where: string;
  /** As written in the dashboard (Grafana variables unexpanded). */
  raw: string;
  /** The PromQL that reaches Prometheus (before variable substitution). */
  promql: string;
}

/** Every query in a dashboard: panel targets (nested rows too) and query variables. */
export function dashboardQueries(dashboard: Dashboard): DashboardQuery[] {
  const queries: DashboardQuery[] = [];
  const walk = (panels: Panel[] | undefined): void => {
    for (const panel of panels ?? []) {
      for (const target of panel.targets ?? []) {
        if (typeof target.expr !== "string" || target.expr.trim() === "") continue;
        queries.push({ where: `panel "${panel.title ?? ""}" (id ${panel.id ?? "?"}) target ${target.refId ?? "?"}`, raw: target.expr, promql: target.expr });
      }
      walk(panel.panels);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type !== "query") continue;
    const raw = typeof v.query === "string" ? v.query : (v.query?.query ?? "");
    const promql = variableQueryPromql(raw);
    if (promql !== undefined) queries.push({ where: `variable ${v.name}`, raw, promql });
  }
  return queries;
}

/** The PromQL behind a Grafana Prometheus variable query; undefined for ones that select no metric (`label_values(label)`, `label_names()`). */
export function variableQueryPromql(raw: string): string | undefined {
  const q = raw.trim();
  const labelValues = /^label_values\(\s*(.+)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$/s.exec(q);
  if (labelValues) return `group by (${labelValues[2]}) (${labelValues[1]})`;
  const queryResult = /^query_result\((.*)\)$/s.exec(q);
  if (queryResult) return queryResult[1];
  if (/^(label_values|label_names|metrics)\(/.test(q)) return undefined;
  return q;
}

/**
 * Expands Grafana variables: the interval macros, and each dashboard
 * variable from `values` (a multi-value selection as a regex alternation).
 * Unknown variables are left as they are, so Prometheus rejects the query.
 */
export function expandVariables(promql: string, values: Record<string, string[]>, rateInterval = "15s"): string {
  const builtins: Record<string, string> = {
    __rate_interval: rateInterval,
    __interval: "1s",
    __interval_ms: "1000",
    __range: "5m",
    __range_s: "300",
    __range_ms: "300000",
  };
  const lookup = (name: string): string | undefined => builtins[name] ?? (values[name] !== undefined ? alternation(values[name]) : undefined);
  return promql.replace(/\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\[\[([A-Za-z0-9_]+)(?::[^\]]*)?\]\]|\$([A-Za-z0-9_]+)/g, (whole, a?: string, b?: string, c?: string) => lookup((a ?? b ?? c)!) ?? whole);
}

function alternation(values: string[]): string {
  if (values.length === 1) return values[0]!;
  return `(${values.join("|")})`;
}

/** The dashboard's variables with Grafana's "All" value (allValue, or every option). */
export function allSelections(dashboard: Dashboard): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type === "datasource") continue;
    out[v.name] = v.allValue !== undefined ? [v.allValue] : (v.options ?? []).map((o) => o.value).filter((x) => x !== "$__all");
    if (out[v.name]!.length === 0) out[v.name] = [".*"];
  }
  return out;
}
