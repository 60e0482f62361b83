/**
 * @module Starts and stops a real Prometheus on loopback for tests and local
 * runs: a free port, a generated config of static scrape targets, a temporary
 * TSDB directory removed on stop. Queries go through Prometheus's HTTP API
 * (`/api/v1/query`, `/api/v1/targets`, `/api/v1/label/__name__/values`). The
 * binary comes from `hack/tools/60-prometheus.sh` (run on demand when it is
 * missing).
 *
 *     const prom = await startPrometheus({ targets: [{ job: "engine", url: "http://127.0.0.1:8080/metrics" }], scrapeIntervalMs: 1000 });
 *     await prom.waitForTargetsUp();
 *     const r = await prom.query("interlace_engine_tokens_decoded_total");
 *     await prom.stop();
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./nats.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** One endpoint to scrape. */
export interface ScrapeTarget {
  /** The `job` label; targets sharing a job must share scheme and path. */
  job: string;
  /** The full metrics URL, e.g. `http://127.0.0.1:9464/metrics`. */
  url: string;
  /** Extra target labels (added to every series scraped from it). */
  labels?: Record<string, string>;
}

export interface PrometheusOptions {
  targets: ScrapeTarget[];
  /** Scrape (and rule evaluation) interval; default 1000 ms. */
  scrapeIntervalMs?: number;
  /** Default: a free port on 127.0.0.1. */
  port?: number;
  /** Forward Prometheus's own log to this process's stderr (default false). */
  verbose?: boolean;
}

/** One series of an instant vector. */
export interface Sample {
  metric: Record<string, string>;
  value: number;
}

/** An instant query's answer; failures (bad PromQL, …) are values, not exceptions. */
export type QueryResult =
  | { ok: true; resultType: "vector"; result: Sample[] }
  | { ok: true; resultType: "scalar" | "string"; result: Sample[] }
  | { ok: true; resultType: "matrix"; result: Sample[] }
  | { ok: false; errorType: string; error: string };

/** A scrape target as Prometheus reports it. */
export interface TargetState {
  scrapeUrl: string;
  job: string;
  health: "up" | "down" | "unknown";
  lastError: string;
  labels: Record<string, string>;
}

/** A running Prometheus. */
export interface Prometheus {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Runs an instant query at "now". */
  query(promql: string): Promise<QueryResult>;
  /** Runs an instant query that must succeed and returns its samples (throws on a query error). */
  samples(promql: string): Promise<Sample[]>;
  /** Polls `promql` until `accept` holds for its samples; returns them. Throws with the last answer at the deadline. */
  waitForQuery(promql: string, accept: (samples: Sample[]) => boolean, timeoutMs?: number): Promise<Sample[]>;
  /** The active targets and their scrape health. */
  targets(): Promise<TargetState[]>;
  /** Resolves once every configured target has been scraped successfully; throws with each target's last error at the deadline. */
  waitForTargetsUp(timeoutMs?: number): Promise<void>;
  /** Every metric name in the TSDB (`/api/v1/label/__name__/values`). */
  metricNames(): Promise<string[]>;
  /** Stops the process (SIGTERM, SIGKILL after 5 s) and removes its TSDB directory. */
  stop(): Promise<void>;
}

/** The cached prometheus binary, installed on demand. */
export function prometheusBinary(): string {
  const bin = join(process.env["INTERLACE_BIN"] ?? join(process.env["INTERLACE_CACHE"] ?? join(ROOT, ".cache"), "bin"), "prometheus");
  if (!existsSync(bin)) {
    const r = spawnSync("bash", [join(ROOT, "hack/tools/60-prometheus.sh")], { stdio: "inherit" });
    if (r.status !== 0 || !existsSync(bin)) throw new Error(`prometheus is not installed and hack/tools/60-prometheus.sh failed (exit ${r.status})`);
  }
  return bin;
}

/**
 * The Prometheus config for `targets`, as JSON (a YAML subset Prometheus
 * reads). One scrape config per job; a job's targets share scheme and path.
 */
export function prometheusConfig(targets: ScrapeTarget[], scrapeIntervalMs: number): string {
  const interval = `${Math.max(1, Math.round(scrapeIntervalMs))}ms`;
  const jobs = new Map<string, { scheme: string; path: string; groups: { targets: string[]; labels: Record<string, string> }[] }>();
  for (const target of targets) {
    const u = new URL(target.url);
    const scheme = u.protocol.replace(/:$/, "");
    const path = `${u.pathname}${u.search}`;
    const job = jobs.get(target.job) ?? { scheme, path, groups: [] };
    if (job.scheme !== scheme || job.path !== path) throw new Error(`targets of job ${target.job} differ in scheme or path: ${target.url}`);
    job.groups.push({ targets: [u.host], labels: target.labels ?? {} });
    jobs.set(target.job, job);
  }
  return JSON.stringify({
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    scrape_configs: [...jobs].map(([name, job]) => ({
      job_name: name,
      scheme: job.scheme,
      metrics_path: job.path,
      static_configs: job.groups,
    })),
  });
}

interface ApiAnswer<T> {
  status: "success" | "error";
  data?: T;
  errorType?: string;
  error?: string;
}

function toSamples(resultType: string, result: unknown): Sample[] {
  const num = (v: unknown): number => Number((v as [number, string])[1]);
  if (resultType === "vector") return (result as { metric: Record<string, string>; value: [number, string] }[]).map((s) => ({ metric: s.metric, value: num(s.value) }));
  if (resultType === "scalar" || resultType === "string") return [{ metric: {}, value: num(result) }];
  // A range vector at an instant: its latest sample per series.
  return (result as { metric: Record<string, string>; values: [number, string][] }[]).map((s) => ({ metric: s.metric, value: num(s.values[s.values.length - 1]) }));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Starts Prometheus and resolves once it reports ready (`/-/ready`). */
export async function startPrometheus(options: PrometheusOptions): Promise<Prometheus> {
  const bin = prometheusBinary();
  const scrapeIntervalMs = options.scrapeIntervalMs ?? 1000;
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), "interlace-prometheus-"));
  const configFile = join(dir, "prometheus.yml");
  writeFileSync(configFile, prometheusConfig(options.targets, scrapeIntervalMs));
  const verbose = options.verbose ?? false;
  const child = spawn(
    bin,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--storage.tsdb.retention.time=1h",
      "--log.level=warn",
    ],
    { stdio: ["ignore", verbose ? "inherit" : "ignore", verbose ? "inherit" : "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((r) =>
    child.once("exit", (code) => {
      exitCode = code;
      r();
    }),
  );
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  const url = `http://127.0.0.1:${port}`;

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exitCode !== undefined) {
      cleanup();
      throw new Error(`prometheus exited with ${exitCode}: ${stderr}`);
    }
    const ready = await fetch(`${url}/-/ready`).then((r) => r.ok, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await exited;
      cleanup();
      throw new Error(`prometheus not ready on port ${port} within 30 s: ${stderr}`);
    }
    await sleep(50);
  }

  async function api<T>(path: string, params: Record<string, string> = {}): Promise<ApiAnswer<T>> {
    const res = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(params).toString(),
    });
    return (await res.json()) as ApiAnswer<T>;
  }

  async function query(promql: string): Promise<QueryResult> {
    const answer = await api<{ resultType: "vector" | "scalar" | "string" | "matrix"; result: unknown }>("/api/v1/query", { query: promql });
    if (answer.status !== "success" || answer.data === undefined) return { ok: false, errorType: answer.errorType ?? "unknown", error: answer.error ?? "no data" };
    return { ok: true, resultType: answer.data.resultType, result: toSamples(answer.data.resultType, answer.data.result) } as QueryResult;
  }

  async function samples(promql: string): Promise<Sample[]> {
    const r = await query(promql);
    if (!r.ok) throw new Error(`query ${promql} failed: ${r.errorType}: ${r.error}`);
    return r.result;
  }

  async function targets(): Promise<TargetState[]> {
    const res = await fetch(`${url}/api/v1/targets?state=active`);
    const answer = (await res.json()) as ApiAnswer<{ activeTargets: { scrapeUrl: string; health: TargetState["health"]; lastError: string; labels: Record<string, string>; scrapePool: string }[] }>;
    return (answer.data?.activeTargets ?? []).map((t) => ({ scrapeUrl: t.scrapeUrl, job: t.labels["job"] ?? t.scrapePool, health: t.health, lastError: t.lastError, labels: t.labels }));
  }

  let stopped = false;
  return {
    url,
    port,
    query,
    samples,
    targets,
    async waitForQuery(promql, accept, timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      let last: Sample[] = [];
      for (;;) {
        last = await samples(promql);
        if (accept(last)) return last;
        if (Date.now() > until) throw new Error(`timed out waiting for ${promql}; last answer ${JSON.stringify(last)}`);
        await sleep(Math.min(200, scrapeIntervalMs / 4));
      }
    },
    async waitForTargetsUp(timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const states = await targets();
        if (states.length >= options.targets.length && states.every((s) => s.health === "up")) return;
        if (Date.now() > until) {
          throw new Error(`targets not up within ${timeoutMs} ms: ${states.map((s) => `${s.job} ${s.scrapeUrl} ${s.health} ${s.lastError}`).join("; ") || "none active"}`);
        }
        await sleep(Math.min(200, scrapeIntervalMs / 4));
      }
    },
    async metricNames() {
      const res = await fetch(`${url}/api/v1/label/__name__/values`);
      const answer = (await res.json()) as ApiAnswer<string[]>;
      if (answer.status !== "success") throw new Error(`label values: ${answer.errorType}: ${answer.error}`);
      return answer.data ?? [];
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (exitCode === undefined) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }
      cleanup();
    },
  };
}
