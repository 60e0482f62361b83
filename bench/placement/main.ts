/**
 * @module `npm run bench -- placement [--apps A] [--prompt-tokens P]
 * [--rate R[,R2...]] [--engines E] [--sequences S] [--duration D] [--seed N]
 * [--slo-ms MS] [--distinct] [--patience-ms MS] [--prefix-wait-ms MS] [--prefix-slack N] [--prefix-warm-sessions N] [--app-homes on|off] [--queue-ms MS] [--prefix-store K] [--front router|envoy]
 * [--engine-logs DIR]
 * [--index heartbeat|events] [--model-preset bench|test] [--routers N] [--policies LIST] [--quick] [--json FILE]`: session placement policies side by
 * side on the same Poisson arrivals — round-robin, least-loaded and
 * Interlace's prefix affinity under the CHWBL load bound — through the real
 * router, real engine processes (the generated `bench` model) heartbeating
 * into NATS, and a real tool runner. `--front envoy` compares the two front
 * doors instead: prefix affinity through the router, and the same placement
 * through a real Envoy asking the endpoint picker (GAIE ext_proc,
 * hack/envoy.ts), on the same arrivals; it adds each request's open latency
 * (POST to 201) and the paired per-request difference, the picker's added
 * latency. `--index` picks the router's prefix index (its `--prefix-index`,
 * default events: the engines' KV events, heartbeats as the fallback;
 * heartbeat: heartbeat snapshots only), so the two compare on the same
 * arrivals. `--routers N` (default 1) runs N router replicas, each its own
 * process (the chart's entrypoint), and the client spreads sessions over
 * them in turn (arrival i through replica i mod N), so the replicas place
 * one stream of arrivals together, each seeing the others' placements only
 * through NATS (heartbeats, KV events, shared reservations). `--policies`
 * (comma separated; default all three) runs only some, so a sweep can take
 * one policy past another's ceiling without rerunning the others. Per policy: TTFT p50/p90, task latency
 * p50/p90, tokens prefilled per session, prefix hit ratio (tokens served
 * from a resident prefix over tokens that could have been), and the highest
 * swept rate whose TTFT p90 stays under the SLO. An engine runs at most
 * `--sequences` sessions; the client retries a session refused with 429/503
 * after its Retry-After, and with `--queue-ms` (the router's flag and
 * default, 30000; 0: off) a session every engine refuses first waits in the
 * router's capacity queue. TTFT counts from the arrival, so overload shows as
 * TTFT rather than as lost sessions. `--apps 1` makes every
 * session share one prompt, `--distinct` gives every session a prompt of its
 * own: the two cases where affinity has nothing to gain and must not lose. Every run (policy x rate)
 * gets apps with system prompts of its own, so each starts with cold caches
 * without restarting the engines.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { TopLevelSpec } from "vega-lite";
import { createLogger, parseArgv, readEventStream, type SessionEvent } from "../../common/src/index.js";
import { appKey, openAppsBucket } from "../../common/src/protocol/index.js";
import { spawnEngine, type EngineProcess } from "../../hack/engine-process.js";
import { NatsServer } from "../../hack/nats.js";
import { spawnToolRunner } from "../../hack/stack.js";
import { routerOptions } from "../../router/src/config.js";
import { PREFIX_INDEXES, type PrefixIndexKind } from "../../router/src/prefix-index.js";
import { DEFAULT_PREFIX_SLACK, startRouter, type PlacementPolicy, type Router } from "../../router/src/index.js";
import { pickerOptions, startPicker, type Picker } from "../../router/src/picker/index.js";
import { EnvoyGateway, type ExtProcTiming } from "../../hack/envoy.js";
import { spawnRouter, type RouterProcess } from "../../hack/router-process.js";
import { parsePickTiming } from "../../router/src/server-timing.js";
import { PRESET_NAMES } from "../../engine-pod/src/model/presets.js";
import { connect } from "@nats-io/transport-node";
import { mean, quantile, r3 } from "../lib/stats.js";
import { renderSvg } from "../lib/output.js";
import { runnerLogFile, summarizeRunnerLog } from "../lib/runner-log.js";
import { appName, arrivals, benchApps, BENCH_NS, BENCH_POOL, TOOL_POOL, type Arrival, type WorkloadOptions } from "./workload.js";

const POLICIES: PlacementPolicy[] = ["round-robin", "least-loaded", "prefix-affinity"];

/** Which front door sessions come in through: the router, or Envoy asking the endpoint picker. */
type Front = "router" | "envoy";

/** One compared mode: a placement policy behind a front door. */
interface Mode {
  front: Front;
  policy: PlacementPolicy;
}

const label = (m: Mode): string => (m.front === "router" ? m.policy : `${m.policy} via envoy`);

interface Config {
  apps: number;
  promptTokens: number;
  rates: number[];
  engines: number;
  sequences: number;
  durationS: number;
  seed: number;
  sloMs: number;
  /** The rate the headline figures are taken at (the first `--rate`). */
  baseRate: number;
  quick: boolean;
  json?: string;
  calls: number;
  toolMs: number;
  loadFactor: number;
  /** The router's `--prefix-slack` (prefix affinity only). */
  prefixSlack: number;
  /** The router's `--prefix-warm-sessions` (hot-prefix warming; 0: off). */
  prefixWarmSessions: number;
  /** The router's `--app-homes` (prefix affinity: each active app's home engine). */
  appHomes: boolean;
  /** Where each engine's log (debug level) is written, one file per engine and run (absent: not kept). */
  engineLogs?: string;
  /** The router's `--queue-ms`: how long a session waits in its capacity queue with every engine full (0: 429 at once). */
  queueMs: number;
  distinct: boolean;
  /** How long a client keeps retrying a refused session (429/503, after Retry-After). */
  patienceMs: number;
  /** The router's `--prefix-wait-ms` (prefix affinity only). */
  prefixWaitMs: number;
  /** The engines' `--prefix-store` (every policy: the engines are the same, only placement differs). */
  prefixStore: number;
  /** `envoy`: prefix affinity through the router vs through Envoy and the endpoint picker (instead of the three policies). */
  front: Front;
  /** The router's prefix index (`--prefix-index`). */
  index: PrefixIndexKind;
  /**
   * The engines' generated model (`--model-preset`): `bench` decodes at a
   * realistic pace; `test` decodes in milliseconds, so the engines leave the
   * CPU to the front doors and a run isolates their own overhead.
   */
  modelPreset: (typeof PRESET_NAMES)[number];
  /** Router replicas (processes) the client spreads sessions over. */
  routers: number;
  /** The policies compared through the router (`--policies`; `--front envoy` compares front doors instead). */
  policies: PlacementPolicy[];
}

function parseConfig(argv: string[]): Config {
  const f = parseArgv(argv);
  const quick = f.has("quick");
  const num = (name: string, def: number): number => {
    const v = f.get(name);
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got "${v}"`);
    return n;
  };
  const rate = f.get("rate");
  // Default rates sit around where two one-thread engines saturate on ~1k-token prompts: a cold
  // session prefills ~1.6k tokens at ~130 tokens/s (~12 s), one with its app's prefix resident ~600
  // (~5 s), so the pair serves ~0.16 cold or ~0.4 warm sessions/s and the sweep crosses both knees.
  const base = rate === undefined ? 0.12 : Number(rate.split(",")[0]);
  const rates = rate?.includes(",") ? rate.split(",").filter((x) => x !== "").map(Number) : quick ? [base, 2 * base] : [base / 2, base, 2 * base, 3 * base];
  if (rates.some((r) => !Number.isFinite(r) || r <= 0)) throw new Error(`--rate must be positive numbers, got "${rate}"`);
  return {
    apps: num("apps", 6),
    promptTokens: num("prompt-tokens", 1024),
    rates,
    engines: num("engines", 2),
    sequences: num("sequences", 4),
    durationS: num("duration", quick ? 60 : 120),
    seed: num("seed", 1),
    // A cold session's first token takes ~12 s on one thread here: the SLO admits it unqueued.
    sloMs: num("slo-ms", 20000),
    baseRate: base,
    quick,
    ...(f.get("json") !== undefined ? { json: f.get("json")! } : {}),
    calls: num("calls", 2),
    toolMs: num("tool-ms", 150),
    loadFactor: num("load-factor", 1.25),
    // The router's default; 0 is the bound alone.
    prefixSlack: f.get("prefix-slack") === "0" ? 0 : num("prefix-slack", DEFAULT_PREFIX_SLACK),
    // The router's default; 0 turns warming off.
    prefixWarmSessions: f.get("prefix-warm-sessions") === "0" ? 0 : num("prefix-warm-sessions", 3),
    appHomes: onOff(f.get("app-homes"), "app-homes", true),
    ...(f.get("engine-logs") !== undefined ? { engineLogs: f.get("engine-logs")! } : {}),
    // The router's default; 0 turns the queue off (the client's retries are then the only wait).
    queueMs: f.get("queue-ms") === "0" ? 0 : num("queue-ms", 30_000),
    distinct: f.has("distinct"),
    patienceMs: num("patience-ms", 120_000),
    // The break-even the router's flag documents: about one cold prefill of an app's prompt, ~10 ms a token on one thread here.
    prefixWaitMs: f.get("prefix-wait-ms") === "0" ? 0 : num("prefix-wait-ms", Math.round(num("prompt-tokens", 1024) * 10)),
    // Enough for the pool's stores together to hold every app's prefix while one engine's cannot (the issue's regime).
    prefixStore: f.get("prefix-store") === "0" ? 0 : num("prefix-store", Math.ceil(num("apps", 6) / num("engines", 2))),
    front: frontOf(f.get("front")),
    index: indexOf(f.get("index")),
    modelPreset: presetOf(f.get("model-preset")),
    routers: routersOf(f.get("routers")),
    policies: policiesOf(f.get("policies")),
  };
}

function onOff(value: string | undefined, name: string, def: boolean): boolean {
  if (value === undefined) return def;
  if (value !== "on" && value !== "off") throw new Error(`--${name} must be on or off, got "${value}"`);
  return value === "on";
}

function policiesOf(value: string | undefined): PlacementPolicy[] {
  if (value === undefined) return POLICIES;
  const list = value.split(",").filter((p) => p !== "");
  const unknown = list.filter((p) => !(POLICIES as string[]).includes(p));
  if (list.length === 0 || unknown.length > 0) throw new Error(`--policies must list some of ${POLICIES.join(", ")}, got "${value}"`);
  // The table keeps the usual order whatever the flag's.
  return POLICIES.filter((p) => list.includes(p));
}

function presetOf(value: string | undefined): Config["modelPreset"] {
  if (value === undefined) return "bench";
  const preset = PRESET_NAMES.find((p) => p === value);
  if (preset === undefined) throw new Error(`--model-preset must be one of ${PRESET_NAMES.join(", ")}, got "${value}"`);
  return preset;
}

function routersOf(value: string | undefined): number {
  if (value === undefined) return 1;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 16) throw new Error(`--routers must be an integer from 1 to 16, got "${value}"`);
  return n;
}

function indexOf(value: string | undefined): PrefixIndexKind {
  if (value === undefined) return "events";
  if ((PREFIX_INDEXES as readonly string[]).includes(value)) return value as PrefixIndexKind;
  throw new Error(`--index must be ${PREFIX_INDEXES.join(" or ")}, got "${value}"`);
}

function frontOf(value: string | undefined): Front {
  if (value === undefined || value === "router" || value === "envoy") return value ?? "router";
  throw new Error(`--front must be router or envoy, got "${value}"`);
}

/** The modes a run compares: the three policies through the router, or prefix affinity through both front doors. */
function modesOf(config: Config): Mode[] {
  return config.front === "envoy"
    ? [
        { front: "router", policy: "prefix-affinity" },
        { front: "envoy", policy: "prefix-affinity" },
      ]
    : config.policies.map((policy) => ({ front: "router" as const, policy }));
}

interface SessionResult {
  app: number;
  /** The router replica (or front door) it came in through, by index. */
  door?: number;
  /** Arrival, ms after the run's start. */
  at: number;
  ok: boolean;
  status: number;
  /** Why it failed (HTTP body, error event or exception). */
  error?: string;
  engine?: string;
  /** The router's placement reason for the attempt that opened it (prefix, prefix-spill, hash, ...). */
  placement?: string;
  /** 429/503 answers retried before the session opened. */
  retries: number;
  /** Milliseconds the opening attempt waited in the router's capacity queue (`placement.queuedMs`; absent: not through the router). */
  queuedMs?: number;
  /** The attempt that opened it: POST to 201, ms (the front door's placement and proxying, and the engine's admission). */
  openMs?: number;
  /** The front door's own pick for that attempt, from its `Server-Timing: pick;dur=` (body arrived to the engine chosen). */
  pickMs?: number | undefined;
  ttftMs?: number;
  taskMs?: number;
  promptTokens?: number;
  prefilledTokens?: number;
  reusedTokens?: number;
}

interface Run {
  mode: Mode;
  /** Through Envoy: each request's ext_proc timing as Envoy measured it. */
  timings?: ExtProcTiming[];
  /** Through routers: their writes to the shared placement reservations, summed over replicas. */
  kvWrites?: ReservationWrites;
  /** Through routers: hot-prefix warms asked and warmed, summed over replicas. */
  warms?: PrefixWarms;
  /** Through routers: sessions held for the full engine holding their prefix, by how the hold ended, summed over replicas. */
  holds?: PrefixHolds;
  rate: number;
  sessions: SessionResult[];
  wallS: number;
}

/**
 * Opens the session as a client that honours admission control: a 429 (every
 * engine's sequences busy) or 503 is retried after its `Retry-After`, until
 * `patienceMs` after the arrival. The wait counts in the session's TTFT, so
 * an overloaded policy shows up as TTFT, the way its users would see it.
 */
async function openSession(url: string, body: unknown, patienceMs: number): Promise<{ res: Response; retries: number; openMs: number; pickMs: number | undefined }> {
  const deadline = performance.now() + patienceMs;
  for (let retries = 0; ; retries++) {
    const sent = performance.now();
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const openMs = performance.now() - sent;
    if ((res.status !== 429 && res.status !== 503) || performance.now() >= deadline) return { res, retries, openMs, pickMs: parsePickTiming(res.headers.get("server-timing")) };
    const wait = Math.max(100, Number(res.headers.get("retry-after") ?? "1") * 1000);
    await res.body?.cancel();
    await new Promise((r) => setTimeout(r, Math.min(wait, Math.max(0, deadline - performance.now()))));
  }
}

async function runSession(base: string, run: number, a: Arrival, patienceMs: number): Promise<SessionResult> {
  const start = performance.now();
  const app = appName(run, a.app);
  const { res, retries, openMs, pickMs } = await openSession(`${base}/v1/apps/${BENCH_NS}/${app}/sessions`, a.body, patienceMs);
  if (res.status !== 201) return { app: a.app, at: a.at, ok: false, status: res.status, retries, error: (await res.text()).slice(0, 300) };
  const { id, engine, placement } = (await res.json()) as { id: string; engine: string; placement: { reason: string; queuedMs?: number } };
  const events = await fetch(`${base}/v1/apps/${BENCH_NS}/${app}/sessions/${id}/events`);
  let ttft: number | undefined;
  let promptTokens = 0;
  let done: Extract<SessionEvent, { type: "done" }> | undefined;
  let error: string | undefined;
  for await (const e of readEventStream<SessionEvent>(events.body!)) {
    if (e.type === "started") promptTokens = e.promptTokens;
    if (e.type === "error" || e.type === "call_error") error = `${e.code}: ${e.message}`;
    if (ttft === undefined && (e.type === "text" || e.type === "call")) ttft = performance.now() - start;
    if (e.type === "done") done = e;
  }
  if (done === undefined || done.reason === "error") return { app: a.app, at: a.at, ok: false, status: 500, engine, retries, error: error ?? `stream ended with ${done?.reason ?? "no done event"}` };
  const prefilled = done.usage.prefilledTokens;
  return {
    app: a.app,
    at: a.at,
    ok: true,
    status: 201,
    engine,
    placement: placement.reason,
    retries,
    ...(placement.queuedMs !== undefined ? { queuedMs: placement.queuedMs } : {}),
    openMs,
    pickMs,
    ttftMs: ttft ?? performance.now() - start,
    taskMs: performance.now() - start,
    promptTokens,
    prefilledTokens: prefilled,
    reusedTokens: Math.max(0, promptTokens - prefilled),
  };
}

async function startEngines(config: Config, natsUrl: string): Promise<EngineProcess[]> {
  const contextSize = Math.max(2048, Math.ceil((config.promptTokens * 1.5 + 512) / 256) * 256);
  const engines: EngineProcess[] = [];
  // One at a time: model loads and calibration compete for the same two cores.
  for (let i = 0; i < config.engines; i++) {
    engines.push(
      await spawnEngine(
        [
          "--model-preset", config.modelPreset, "--executor", "nats", "--nats-url", natsUrl, "--pool", `${BENCH_NS}/${BENCH_POOL}`, "--pod-name", `bench-engine-${i}`,
          "--sequences", String(config.sequences), "--context-size", String(contextSize), "--threads", "1", "--heartbeat-ms", "250", "--kv-policy", "keep",
          "--prefix-store", String(config.prefixStore),
        ],
        {
          env: { LOG_LEVEL: config.engineLogs !== undefined ? "debug" : "info" },
          readyTimeoutMs: 300_000,
          ...(config.engineLogs !== undefined ? { logFile: join(config.engineLogs, `bench-engine-${i}.log`) } : {}),
        },
      ),
    );
  }
  return engines;
}

/** KV writes to `interlace-reservations` and the placements they served, from the routers' metrics. */
interface ReservationWrites {
  reserve: number;
  release: number;
  /** Writes that lost a compare-and-set (included above). */
  conflicts: number;
  placements: number;
}

/** Hot-prefix warms the routers asked (`POST /v1/prefixes`), and those the engine answered `warmed` (a new store entry). */
interface PrefixWarms {
  asked: number;
  warmed: number;
}

/** Sessions a router held for the full engine holding their prefix: placed there, or spilled when the wait ran out. */
interface PrefixHolds {
  placed: number;
  spilled: number;
}

/** What the routers' counters say about a run, summed over the replicas. */
interface RouterCounters {
  writes: ReservationWrites;
  warms: PrefixWarms;
  holds: PrefixHolds;
}

/** Sums the reservation-write, placement, warm and hold counters over the routers at `bases`. */
async function routerCounters(bases: readonly string[]): Promise<RouterCounters> {
  const out: ReservationWrites = { reserve: 0, release: 0, conflicts: 0, placements: 0 };
  const warms: PrefixWarms = { asked: 0, warmed: 0 };
  const holds: PrefixHolds = { placed: 0, spilled: 0 };
  for (const base of bases) {
    const text = await fetch(`${base}/metrics`).then((r) => r.text());
    for (const m of text.matchAll(/^interlace_router_reservation_kv_writes_total\{([^}]*)\} (\S+)$/gm)) {
      const n = Number(m[2]);
      if (m[1]!.includes('write="reserve"')) out.reserve += n;
      if (m[1]!.includes('write="release"')) out.release += n;
      if (m[1]!.includes('outcome="conflict"')) out.conflicts += n;
    }
    for (const m of text.matchAll(/^interlace_router_placements_total\{[^}]*\} (\S+)$/gm)) out.placements += Number(m[1]);
    for (const m of text.matchAll(/^interlace_router_prefix_warms_total\{outcome="([^"]*)"\} (\S+)$/gm)) {
      warms.asked += Number(m[2]);
      if (m[1] === "warmed") warms.warmed += Number(m[2]);
    }
    for (const m of text.matchAll(/^interlace_router_prefix_holds_total\{outcome="(placed|spilled)"\} (\S+)$/gm)) holds[m[1] as keyof PrefixHolds] += Number(m[2]);
  }
  return { writes: out, warms, holds };
}

/** The front door a run's sessions come in through, started for the run and closed after it. */
interface FrontDoor {
  /** Its base URLs: one per router replica (arrivals take them in turn), or Envoy's. */
  bases: string[];
  /** Whether it sees every engine and the run's last app yet. */
  sees(engines: number, lastApp: string): Promise<boolean>;
  /** Through Envoy: the requests' ext_proc timings (read before closing). */
  timings?(): Promise<ExtProcTiming[]>;
  /** Through routers: their reservation writes, placements and warms so far (read before closing). */
  counters?(): Promise<RouterCounters>;
  close(): Promise<void>;
}

async function startFront(config: Config, natsUrl: string, mode: Mode): Promise<FrontDoor> {
  const log = createLogger("bench", "warn");
  const placement = { placement: mode.policy, loadFactor: config.loadFactor, prefixSlack: config.prefixSlack, prefixWaitMs: config.prefixWaitMs, prefixWarmSessions: config.prefixWarmSessions, appHomes: config.appHomes, logLevel: "warn" };
  const queue = { queueMs: config.queueMs };
  if (mode.front === "router" && config.routers > 1) return startRouterProcesses(config, natsUrl, mode);
  if (mode.front === "router") {
    const router: Router = await startRouter(routerOptions({ natsUrl, routerId: `bench-${mode.policy}`, upstreamTimeoutMs: 30_000, prefixIndex: config.index, ...placement, ...queue }), log);
    return {
      bases: [`http://127.0.0.1:${router.port}`],
      sees: async (n, app) => router.engines.loads(BENCH_NS, BENCH_POOL).length >= n && router.apps.get(BENCH_NS, app) !== undefined,
      counters: () => routerCounters([`http://127.0.0.1:${router.port}`]),
      close: () => router.close(),
    };
  }
  const picker: Picker = await startPicker(pickerOptions({ natsUrl, pool: { namespace: BENCH_NS, name: BENCH_POOL }, ...placement }), log);
  let envoy: EnvoyGateway;
  try {
    envoy = await EnvoyGateway.start({ pickerPorts: [picker.grpcPort], messageTimeoutMs: config.prefixWaitMs + 30_000, timings: true });
  } catch (err) {
    await picker.close();
    throw err;
  }
  return {
    bases: [envoy.url],
    sees: async (n, app) => picker.engines.loads(BENCH_NS, BENCH_POOL).length >= n && picker.apps.get(BENCH_NS, app) !== undefined,
    timings: async () => {
      // Envoy flushes its access log about once a second.
      await new Promise((r) => setTimeout(r, 1500));
      return envoy.timings();
    },
    close: async () => {
      await envoy.stop();
      await picker.close();
    },
  };
}

/** `--routers N`: N router processes with the same options, which see each other only through NATS. */
async function startRouterProcesses(config: Config, natsUrl: string, mode: Mode): Promise<FrontDoor> {
  const stops: (() => unknown)[] = [];
  const close = async (): Promise<void> => {
    for (const stop of stops.splice(0)) await stop();
  };
  const owner = { teardown: (fn: () => unknown) => void stops.push(fn) };
  const args = (i: number): string[] => [
    "--router-id", `bench-${mode.policy}-${i}`, "--nats-url", natsUrl, "--placement", mode.policy, "--load-factor", String(Math.round(config.loadFactor * 100)),
    "--prefix-slack", String(config.prefixSlack), "--prefix-warm-sessions", String(config.prefixWarmSessions), "--app-homes", config.appHomes ? "on" : "off", "--prefix-wait-ms", String(config.prefixWaitMs), "--prefix-index", config.index, "--upstream-timeout-ms", "30000",
    "--queue-ms", String(config.queueMs),
  ];
  try {
    const replicas: RouterProcess[] = [];
    for (let i = 0; i < config.routers; i++) replicas.push(await spawnRouter(owner, args(i)));
    return {
      bases: replicas.map((r) => r.url),
      // Each replica's engine gauge and its answer for the run's last app.
      sees: async (n, app) => {
        for (const r of replicas) {
          const metrics = await fetch(`${r.url}/metrics`).then((res) => res.text());
          const seen = new RegExp(`^interlace_router_engines\\{pool="${BENCH_NS}/${BENCH_POOL}"\\} (\\d+)`, "m").exec(metrics);
          if (seen === null || Number(seen[1]) < n) return false;
          if ((await fetch(`${r.url}/v1/apps/${BENCH_NS}/${app}`)).status !== 200) return false;
        }
        return true;
      },
      counters: () => routerCounters(replicas.map((r) => r.url)),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

async function runOnce(config: Config, natsUrl: string, run: number, mode: Mode, rate: number, arrivalsList: Arrival[]): Promise<Run> {
  const front = await startFront(config, natsUrl, mode);
  try {
    const deadline = Date.now() + 30_000;
    while (!(await front.sees(config.engines, appName(run, config.apps - 1)))) {
      if (Date.now() > deadline) throw new Error(`the ${mode.front} does not see every engine and app`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const t0 = performance.now();
    const pending: Promise<SessionResult>[] = [];
    for (const [i, a] of arrivalsList.entries()) {
      const wait = a.at - (performance.now() - t0);
      if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      const door = i % front.bases.length;
      pending.push(
        runSession(front.bases[door]!, run, a, config.patienceMs)
          .catch((err: unknown): SessionResult => ({ app: a.app, at: a.at, ok: false, status: 0, retries: 0, error: String(err) }))
          .then((x) => ({ ...x, door })),
      );
    }
    const sessions = await Promise.all(pending);
    const wallS = (performance.now() - t0) / 1000;
    // The last sessions' reservations are released by a heartbeat after they were taken: wait one out.
    if (front.counters !== undefined) await new Promise((res) => setTimeout(res, 1_000));
    const counters = await front.counters?.();
    return {
      mode,
      rate,
      sessions,
      wallS,
      ...(front.timings !== undefined ? { timings: await front.timings() } : {}),
      ...(counters !== undefined ? { kvWrites: counters.writes, warms: counters.warms, holds: counters.holds } : {}),
    };
  } finally {
    await front.close();
  }
}

interface Summary {
  policy: PlacementPolicy;
  front: Front;
  rate: number;
  completed: number;
  rejected: number;
  /** Sessions that opened only after one or more 429/503 retries. */
  retried: number;
  /** Sessions that waited in the router's capacity queue before they opened. */
  queued: number;
  ttft_p50_ms: number;
  ttft_p90_ms: number;
  task_p50_ms: number;
  task_p90_ms: number;
  prefilled_tokens_per_session: number;
  prefix_hit_ratio: number;
  reused_tokens: number;
  achievable_tokens: number;
  /** Completed sessions by the router's placement reason: why the misses missed. */
  placements: Record<string, number>;
  /** POST to 201 of the attempt that opened each session (the front door's own cost, and the engine's admission). */
  open_p50_ms: number;
  open_p99_ms: number;
  /** Through routers: writes to the shared reservations per placement (reserve + release, conflicts included), and their counts. */
  reservation_kv_writes_per_placement?: number;
  reservation_kv_writes?: ReservationWrites;
  /** Through routers: hot-prefix warms asked and answered `warmed`, summed over replicas. */
  prefix_warms?: PrefixWarms;
  /** Through routers: sessions held for the full engine holding their prefix, placed there or spilled when the wait ran out, summed over replicas. */
  prefix_holds?: PrefixHolds;
}

/**
 * Achievable reuse: every session after the first of its app could have been
 * served its app's shared prefix from cache. That prefix is measured, not
 * guessed: the most tokens any session of the app had reused in any run.
 */
function summarize(run: Run, appPrefix: Map<number, number>): Summary {
  const ok = run.sessions.filter((s) => s.ok);
  const seen = new Set<number>();
  let achievable = 0;
  let reused = 0;
  for (const s of run.sessions) {
    if (!s.ok) continue;
    if (seen.has(s.app)) {
      const cap = appPrefix.get(s.app) ?? 0;
      achievable += cap;
      reused += Math.min(cap, s.reusedTokens ?? 0);
    } else seen.add(s.app);
  }
  const ttft = ok.map((s) => s.ttftMs!);
  const task = ok.map((s) => s.taskMs!);
  const open = ok.map((s) => s.openMs!);
  return {
    policy: run.mode.policy,
    front: run.mode.front,
    rate: run.rate,
    completed: ok.length,
    rejected: run.sessions.length - ok.length,
    retried: ok.filter((s) => s.retries > 0).length,
    queued: ok.filter((s) => (s.queuedMs ?? 0) > 0).length,
    ttft_p50_ms: Math.round(quantile(ttft, 0.5)),
    ttft_p90_ms: Math.round(quantile(ttft, 0.9)),
    task_p50_ms: Math.round(quantile(task, 0.5)),
    task_p90_ms: Math.round(quantile(task, 0.9)),
    prefilled_tokens_per_session: Math.round(mean(ok.map((s) => s.prefilledTokens!))),
    prefix_hit_ratio: achievable === 0 ? 0 : r3(reused / achievable),
    reused_tokens: reused,
    achievable_tokens: achievable,
    placements: Object.fromEntries([...new Set(ok.map((s) => s.placement ?? "?"))].sort().map((k) => [k, ok.filter((s) => (s.placement ?? "?") === k).length])),
    open_p50_ms: r3(quantile(open, 0.5)),
    open_p99_ms: r3(quantile(open, 0.99)),
    ...(run.kvWrites !== undefined
      ? { reservation_kv_writes_per_placement: run.kvWrites.placements === 0 ? 0 : r3((run.kvWrites.reserve + run.kvWrites.release) / run.kvWrites.placements), reservation_kv_writes: run.kvWrites }
      : {}),
    ...(run.warms !== undefined ? { prefix_warms: run.warms } : {}),
    ...(run.holds !== undefined ? { prefix_holds: run.holds } : {}),
  };
}

/**
 * The picker's added latency: for each arrival both front doors opened, the
 * open latency through Envoy and the picker less the router's, p50 and p99
 * (paired: the same session, the same rate).
 */
/**
 * What the picker adds to each session opened through Envoy, as Envoy timed
 * its ext_proc calls: the pick (request headers sent to their answer: the
 * picker waits for the body, places, answers) and the response path (the
 * answer's headers and body chunks through the picker); and everything the
 * gateway path added (Envoy's duration less the engine's own time).
 */
function pickerTimings(run: Run): { opens: number; pick_p50_ms: number; pick_p99_ms: number; response_p50_ms: number; response_p99_ms: number; gateway_p50_ms: number; gateway_p99_ms: number } | undefined {
  const opens = (run.timings ?? []).filter((x) => x.path.endsWith("/sessions") && x.status === 201);
  if (opens.length === 0) return undefined;
  const ms = (xs: number[], q: number): number => r3(quantile(xs, q));
  const pick = opens.map((x) => x.request_header_us / 1000);
  const response = opens.map((x) => (x.response_header_us + x.response_body_us) / 1000);
  const gateway = opens.filter((x) => x.upstream_ms !== undefined).map((x) => x.duration_ms - x.upstream_ms!);
  return { opens: opens.length, pick_p50_ms: ms(pick, 0.5), pick_p99_ms: ms(pick, 0.99), response_p50_ms: ms(response, 0.5), response_p99_ms: ms(response, 0.99), gateway_p50_ms: ms(gateway, 0.5), gateway_p99_ms: ms(gateway, 0.99) };
}

/**
 * Each door's own pick, as it reports it (`Server-Timing: pick`): the router
 * and the picker time the same span, the request's body arrived to the
 * engine chosen and the request handed on. The target compares these.
 */
function ownPicks(runs: readonly Run[], rate: number): { router_p50_ms: number; router_p99_ms: number; picker_p50_ms: number; picker_p99_ms: number; paired_p50_ms: number; paired_p99_ms: number; pairs: number } | undefined {
  const router = runs.find((r) => r.rate === rate && r.mode.front === "router" && r.mode.policy === "prefix-affinity");
  const envoy = runs.find((r) => r.rate === rate && r.mode.front === "envoy");
  if (router === undefined || envoy === undefined) return undefined;
  const picks = (run: Run): number[] => run.sessions.flatMap((s) => (s.pickMs !== undefined ? [s.pickMs] : []));
  const diffs: number[] = [];
  router.sessions.forEach((s, i) => {
    const e = envoy.sessions[i];
    if (s.pickMs !== undefined && e?.pickMs !== undefined) diffs.push(e.pickMs - s.pickMs);
  });
  const ms = (xs: number[], q: number): number => r3(quantile(xs, q));
  const [r, p] = [picks(router), picks(envoy)];
  return { router_p50_ms: ms(r, 0.5), router_p99_ms: ms(r, 0.99), picker_p50_ms: ms(p, 0.5), picker_p99_ms: ms(p, 0.99), paired_p50_ms: ms(diffs, 0.5), paired_p99_ms: ms(diffs, 0.99), pairs: diffs.length };
}

function addedLatency(runs: readonly Run[], rate: number): { pairs: number; p50_ms: number; p99_ms: number } | undefined {
  const router = runs.find((r) => r.rate === rate && r.mode.front === "router" && r.mode.policy === "prefix-affinity");
  const envoy = runs.find((r) => r.rate === rate && r.mode.front === "envoy");
  if (router === undefined || envoy === undefined) return undefined;
  const diffs: number[] = [];
  router.sessions.forEach((s, i) => {
    const e = envoy.sessions[i];
    if (s.openMs !== undefined && e?.openMs !== undefined) diffs.push(e.openMs - s.openMs);
  });
  return { pairs: diffs.length, p50_ms: r3(quantile(diffs, 0.5)), p99_ms: r3(quantile(diffs, 0.99)) };
}

function chartSpec(rows: Summary[], sloMs: number): TopLevelSpec {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: `TTFT p90 by arrival rate and placement policy (dashed: SLO ${sloMs} ms)`,
    width: 420,
    height: 260,
    layer: [
      {
        data: { values: rows.map((r) => ({ policy: r.front === "router" ? r.policy : `${r.policy} via envoy`, rate: r.rate, ttft_p90_ms: r.ttft_p90_ms })) },
        mark: { type: "line", point: true },
        encoding: {
          x: { field: "rate", type: "quantitative", title: "sessions / s" },
          y: { field: "ttft_p90_ms", type: "quantitative", title: "TTFT p90 (ms)", scale: { type: "log" } },
          color: { field: "policy", type: "nominal" },
        },
      },
      { data: { values: [{ slo: sloMs }] }, mark: { type: "rule", strokeDash: [4, 4] }, encoding: { y: { field: "slo", type: "quantitative" } } },
    ],
  };
}

export async function run(argv: string[]): Promise<void> {
  const config = parseConfig(argv);
  const started = performance.now();
  const modes = modesOf(config);
  console.log(
    config.front === "envoy"
      ? "Placement benchmark — prefix affinity (CHWBL bound) through the router vs through a real Envoy asking Interlace's endpoint picker (GAIE ext_proc, FULL_DUPLEX_STREAMED), same Poisson arrivals."
      : "Placement benchmark — round-robin vs least-loaded vs prefix affinity (CHWBL bound), same Poisson arrivals for each policy.",
  );
  console.log(
    `Model: generated \`bench\` preset (random weights), scripted tasks (every token a real forward pass; every call through NATS to a real tool runner).\n` +
      `This machine: ${config.engines} engine processes with ONE thread each (2 shared CPU cores, no GPU); every run has apps with prompts of its own, so caches start cold.\n` +
      `Workload: ${config.distinct ? "a prompt of its own for every session (--distinct)" : `${config.apps} apps`} x ~${config.promptTokens}-token system prompts, ${config.calls} tool calls of ${config.toolMs} ms per task, rates ${config.rates.join(", ")}/s for ${config.durationS} s, seed ${config.seed}; ` +
      `${config.sequences} sequences per engine and a prefix store of ${config.prefixStore} (--prefix-store: app prefixes kept beyond the session slots; ${config.apps} apps' prefixes ${config.apps > config.prefixStore ? "exceed one engine's store" : "fit in one engine's store"}, ${config.apps > config.prefixStore * config.engines ? "exceed" : "fit across"} the pool's).\n` +
      `${config.queueMs > 0 ? `A session that finds every engine full waits up to ${config.queueMs} ms in the router's capacity queue, in arrival order (--queue-ms). ` : "The router queues nothing (--queue-ms 0): every engine full is a 429 at once. "}Clients honour admission control: a 429/503 is retried after its Retry-After for up to ${config.patienceMs} ms, and the wait counts in TTFT.\n` +
      `SLO: TTFT p90 <= ${config.sloMs} ms. Load bound: an engine takes a session only while load + 1 <= ceil(${config.loadFactor} x (total load + 1) / engines); ` +
      `prefix affinity waits up to ${config.prefixWaitMs} ms for a full engine holding the session's prefix (--prefix-wait-ms), and an engine holding it may go ${config.prefixSlack} session(s) past the even share ceil((total load + 1) / engines) when over the bound (--prefix-slack).\n` +
      `App homes: ${config.appHomes ? "on (each active app's misses seeded on its home engine, whose prefix store keeps it before replicas)" : "off (a miss goes to the least loaded engine on the app's ring; every prefix store is plain LRU)"} (--app-homes); hot-prefix warming at ${config.prefixWarmSessions} sessions (--prefix-warm-sessions; 0: off).\n` +
      `Prefix index: ${config.index === "events" ? "the engines' KV events, heartbeats as the fallback" : "heartbeat snapshots"} (--index ${config.index}${config.front === "envoy" ? "; the router only: the endpoint picker places from heartbeats" : ""}).\n` +
      `Routers: ${config.routers === 1 ? "one, in the bench's process" : `${config.routers} replicas, each its own process; arrivals take them in turn (--routers)`}${config.front === "envoy" ? " (the router arm; Envoy asks one endpoint picker)" : ""}.\n`,
  );
  const nats = await NatsServer.start();
  const nc = await connect({ servers: nats.url });
  const runnerLog = runnerLogFile("placement");
  const runner = await spawnToolRunner(
    nats.url,
    {
      namespace: BENCH_NS,
      pool: TOOL_POOL,
      tools: [{ name: "sleep", description: "sleep", parameters: { type: "object" }, implementation: { type: "builtin" } }],
      concurrency: 256,
    },
    "bench-runner-0",
    {},
    runnerLog,
  );
  const runs: Run[] = [];
  let engines: EngineProcess[] = [];
  if (config.engineLogs !== undefined) mkdirSync(config.engineLogs, { recursive: true });
  try {
    const kv = await openAppsBucket(nc);
    const t = performance.now();
    engines = await startEngines(config, nats.url);
    console.log(`  ${config.engines} engines ready in ${((performance.now() - t) / 1000).toFixed(0)} s`);
    let runNo = 0;
    for (const rate of config.rates) {
      const wl: WorkloadOptions = { apps: config.apps, promptTokens: config.promptTokens, rate, durationS: config.durationS, seed: config.seed, calls: config.calls, toolMs: config.toolMs, distinct: config.distinct };
      const list = arrivals(wl);
      // Distinct: one app per session, so no two sessions share a system prompt.
      const runConfig = config.distinct ? { ...config, apps: list.length } : config;
      for (const mode of modes) {
        const t = performance.now();
        const run = runNo++;
        for (const app of benchApps(runConfig, run)) await kv.put(appKey(app.namespace, app.name), JSON.stringify(app));
        const r = await runOnce(runConfig, nats.url, run, mode, rate, list);
        runs.push(r);
        const ok = r.sessions.filter((s) => s.ok).length;
        const by = summarize(r, new Map()).placements;
        console.log(
          `  rate ${rate}/s ${label(mode)}: ${ok}/${r.sessions.length} sessions completed in ${r.wallS.toFixed(1)} s (${((performance.now() - t) / 1000).toFixed(0)} s); placed by ${Object.entries(by)
            .map(([k, n]) => `${k} ${n}`)
            .join(", ")}`,
        );
        const reasons = new Map<string, number>();
        for (const x of r.sessions) if (!x.ok) reasons.set(`${x.status} ${x.error ?? ""}`.slice(0, 160), (reasons.get(`${x.status} ${x.error ?? ""}`.slice(0, 160)) ?? 0) + 1);
        for (const [why, n] of reasons) console.log(`    not completed x${n}: ${why}`);
      }
    }
  } finally {
    for (const e of engines) await e.stop();
    await runner.stop();
    await nc.close();
    await nats.stop();
  }

  const appPrefix = new Map<number, number>();
  for (const r of runs) for (const s of r.sessions) if (s.ok) appPrefix.set(s.app, Math.max(appPrefix.get(s.app) ?? 0, s.reusedTokens ?? 0));
  const rows = runs.map((r) => summarize(r, appPrefix));
  const headline = config.baseRate;
  const sustained = (mode: Mode): number => {
    let best = 0;
    for (const r of rows.filter((x) => x.policy === mode.policy && x.front === mode.front).sort((a, b) => a.rate - b.rate)) {
      if (r.ttft_p90_ms <= config.sloMs && r.rejected <= 0.01 * (r.completed + r.rejected)) best = r.rate;
      else break;
    }
    return best;
  };

  console.log(`\n| policy | rate /s | done | queued | retried | rejected | TTFT p50 ms | TTFT p90 ms | task p50 ms | task p90 ms | prefilled tok/session | prefix hit ratio | open p50 / p99 ms |`);
  console.log(`| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |`);
  for (const r of rows) {
    const name = r.front === "router" ? r.policy : `${r.policy} via envoy`;
    console.log(`| ${name} | ${r.rate} | ${r.completed} | ${r.queued} | ${r.retried} | ${r.rejected} | ${r.ttft_p50_ms} | ${r.ttft_p90_ms} | ${r.task_p50_ms} | ${r.task_p90_ms} | ${r.prefilled_tokens_per_session} | ${r.prefix_hit_ratio} | ${r.open_p50_ms} / ${r.open_p99_ms} |`);
  }
  for (const r of rows) {
    const w = r.reservation_kv_writes;
    if (w !== undefined) console.log(`reservation KV writes, ${r.policy} at ${r.rate}/s: ${r.reservation_kv_writes_per_placement} per placement (${w.reserve} reserve + ${w.release} release, ${w.conflicts} of them lost a compare-and-set, over ${w.placements} placements)${r.prefix_warms !== undefined && r.prefix_warms.asked > 0 ? `; hot-prefix warms ${r.prefix_warms.warmed} warmed of ${r.prefix_warms.asked} asked` : ""}${r.prefix_holds !== undefined ? `; prefix holds ${r.prefix_holds.placed} placed on the prefix's engine, ${r.prefix_holds.spilled} spilled` : ""}`);
  }
  const results = modes.map((mode) => {
    const h = rows.find((r) => r.policy === mode.policy && r.front === mode.front && r.rate === headline)!;
    return {
      policy: mode.policy,
      front: mode.front,
      sustained_rate: sustained(mode),
      ttft_p50_ms: h.ttft_p50_ms,
      ttft_p90_ms: h.ttft_p90_ms,
      task_p50_ms: h.task_p50_ms,
      prefilled_tokens_per_session: h.prefilled_tokens_per_session,
      prefix_hit_ratio: h.prefix_hit_ratio,
      open_p50_ms: h.open_p50_ms,
      open_p99_ms: h.open_p99_ms,
    };
  });
  console.log(`\nAt ${headline}/s, and the highest swept rate with TTFT p90 <= ${config.sloMs} ms (0: none of the swept rates):\n`);
  console.log(`| policy | sustained rate /s | TTFT p50 / p90 ms | task p50 ms | prefilled tok/session | prefix hit ratio |`);
  console.log(`| --- | --- | --- | --- | --- | --- |`);
  for (const r of results) console.log(`| ${label(r)} | ${r.sustained_rate} | ${r.ttft_p50_ms} / ${r.ttft_p90_ms} | ${r.task_p50_ms} | ${r.prefilled_tokens_per_session} | ${r.prefix_hit_ratio} |`);
  const added = config.rates.map((rate) => {
    const envoyRun = runs.find((r) => r.rate === rate && r.mode.front === "envoy");
    return { rate, own_pick: ownPicks(runs, rate), paired_open_difference: addedLatency(runs, rate), picker: envoyRun === undefined ? undefined : pickerTimings(envoyRun) };
  });
  if (config.front === "envoy") {
    console.log(`\nThe endpoint picker's added latency per session opened through Envoy, as Envoy timed its ext_proc calls (target: p99 within 2 ms of the router's own placement):`);
    console.log(`pick = request headers sent to their answer (the picker waits for the body, places, answers); response = the answer's headers and body through the picker;`);
    console.log(`gateway = Envoy's duration less the engine's (x-envoy-upstream-service-time); paired = POST-to-201 through Envoy less through the router, same arrival (includes the engines' own jitter).\n`);
    console.log(`| rate /s | opens | pick p50 / p99 ms | response p50 / p99 ms | gateway p50 / p99 ms | paired p50 / p99 ms |`);
    console.log(`| --- | --- | --- | --- | --- | --- |`);
    for (const a of added) {
      const p = a.picker;
      const d = a.paired_open_difference;
      console.log(`| ${a.rate} | ${p?.opens ?? 0} | ${p === undefined ? "-" : `${p.pick_p50_ms} / ${p.pick_p99_ms}`} | ${p === undefined ? "-" : `${p.response_p50_ms} / ${p.response_p99_ms}`} | ${p === undefined ? "-" : `${p.gateway_p50_ms} / ${p.gateway_p99_ms}`} | ${d === undefined ? "-" : `${d.p50_ms} / ${d.p99_ms}`} |`);
    }
    console.log(`\nEach door's own pick, as it reports it in Server-Timing (the request's body arrived to the engine chosen and the request handed on; the same span in both):\n`);
    console.log(`| rate /s | router pick p50 / p99 ms | picker pick p50 / p99 ms | paired (picker less router) p50 / p99 ms | pairs |`);
    console.log(`| --- | --- | --- | --- | --- |`);
    for (const a of added) {
      const o = a.own_pick;
      console.log(`| ${a.rate} | ${o === undefined ? "-" : `${o.router_p50_ms} / ${o.router_p99_ms}`} | ${o === undefined ? "-" : `${o.picker_p50_ms} / ${o.picker_p99_ms}`} | ${o === undefined ? "-" : `${o.paired_p50_ms} / ${o.paired_p99_ms}`} | ${o?.pairs ?? 0} |`);
    }
  }
  const pa = results.find((r) => r.policy === "prefix-affinity" && r.front === "router");
  const ll = results.find((r) => r.policy === "least-loaded") ?? results.find((r) => r.front === "envoy");
  if (config.front === "router" && pa !== undefined && ll !== undefined) console.log(
    `\nAnalytic bound: affinity removes at most the shared prefix from each session's prefill, so its rate gain is bounded by ` +
      `(prefill(P + u) + decode + tools) / (prefill(u) + decode + tools) per engine; here prefilled tokens per session ${ll.prefilled_tokens_per_session} (least-loaded) -> ${pa.prefilled_tokens_per_session} (prefix affinity).`,
  );
  console.log(`Prefix hit ratio = tokens served from a resident prefix / tokens that could have been (each app's shared prefix, measured as the most any of its sessions reused, for every session after the app's first).`);
  console.log(`Total ${((performance.now() - started) / 1000).toFixed(0)} s.`);

  if (config.json !== undefined) {
    const out = {
      results,
      config: {
        apps: config.apps,
        distinct: config.distinct,
        prompt_tokens: config.promptTokens,
        rates: config.rates,
        headline_rate: headline,
        engines: config.engines,
        model_preset: config.modelPreset,
        sequences_per_engine: config.sequences,
        threads_per_engine: 1,
        duration_s: config.durationS,
        seed: config.seed,
        slo_ttft_p90_ms: config.sloMs,
        client_patience_ms: config.patienceMs,
        load_factor: config.loadFactor,
        prefix_slack: config.prefixSlack,
        prefix_warm_sessions: config.prefixWarmSessions,
        app_homes: config.appHomes,
        queue_ms: config.queueMs,
        prefix_wait_ms: config.prefixWaitMs,
        prefix_store_per_engine: config.prefixStore,
        front: config.front,
        index: config.index,
        routers: config.routers,
        policies: modes.map((m) => m.policy),
        calls_per_task: config.calls,
        tool_ms: config.toolMs,
        quick: config.quick,
        model: "generated bench preset (random weights), scripted tasks",
        machine: "2 shared CPU cores, no GPU",
      },
      runs: rows,
      ...(config.front === "envoy" ? { picker_added_latency: added } : {}),
      // Every session of every run, in arrival order: where it went, why, and what it waited (to read a percentile from its causes).
      sessions: runs.map((r) => ({
        policy: r.mode.policy,
        front: r.mode.front,
        rate: r.rate,
        sessions: r.sessions.map((x) => ({
          at_ms: Math.round(x.at),
          app: x.app,
          router: x.door ?? 0,
          engine: x.engine ?? null,
          placement: x.placement ?? null,
          retries: x.retries,
          queued_ms: x.queuedMs ?? null,
          open_ms: x.openMs === undefined ? null : r3(x.openMs),
          pick_ms: x.pickMs === undefined ? null : r3(x.pickMs),
          ttft_ms: x.ttftMs === undefined ? null : Math.round(x.ttftMs),
          task_ms: x.taskMs === undefined ? null : Math.round(x.taskMs),
          prefilled_tokens: x.prefilledTokens ?? null,
          ...(x.error !== undefined ? { error: x.error } : {}),
        })),
      })),
    };
    mkdirSync(dirname(config.json), { recursive: true });
    writeFileSync(config.json, JSON.stringify(out, null, 2) + "\n");
    const svg = config.json.replace(/\.json$/, "") + "-ttft.svg";
    writeFileSync(svg, await renderSvg(chartSpec(rows, config.sloMs)));
    console.log(summarizeRunnerLog(runnerLog));
    console.log(`wrote ${config.json} and ${svg}`);
  }
}
