/**
 * @module Fixtures of the router tests: a real nats-server, real engine
 * processes on the generated `test` model publishing heartbeats, and router
 * replicas in this process; app configs written where the operator writes
 * them (the `interlace-apps` bucket). Everything stops when the test ends.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { KV } from "@nats-io/kv";
import { createLogger, readEventStream, type SessionEvent } from "../../common/src/index.js";
import { appKey, openAppsBucket, withAppDefaults, type AppConfig } from "../../common/src/protocol/index.js";
import { spawnEngine, type EngineProcess } from "../../hack/engine-process.js";
import { startRouter, type Router } from "../../router/src/index.js";
import { routerOptions, type RouterOptions } from "../../router/src/config.js";
import { startNatsServer, type NatsServer } from "../helpers/nats-server.js";
import type { NatsServerOptions } from "../../hack/nats.js";
import { eventually } from "../helpers/wait.js";

interface Teardownable {
  teardown(fn: () => unknown): void;
}

export const POOL = "pool";
export const log = createLogger("test", process.env["LOG_LEVEL"] ?? "silent");

export const SLEEP_TOOL = {
  name: "sleep",
  description: "Waits ms milliseconds.",
  parameters: { type: "object", properties: { ms: { type: "integer", minimum: 0 }, result: { type: "string" } }, required: ["ms"] },
  estimatedLatencyMs: 1000,
};

export function appConfig(name: string, extra: Partial<AppConfig> = {}): AppConfig {
  return withAppDefaults({
    namespace: "default",
    name,
    enginePool: { name: POOL },
    systemPrompt: `You are ${name}. ${"Answer briefly and use tools when useful. ".repeat(4)}`,
    maxTokens: 256,
    tools: [SLEEP_TOOL],
    ...extra,
  });
}

export interface Stack {
  nats: NatsServer;
  nc: NatsConnection;
  apps: KV;
  engines: Map<string, EngineProcess>;
  routers: Router[];
  url(router: number): string;
  putApp(config: AppConfig): Promise<void>;
  /** Waits until every router sees `n` ready engines of the pool. */
  waitEngines(n: number, ms?: number): Promise<void>;
}

export async function spawnPoolEngine(t: Teardownable, natsUrl: string, pod: string, extra: string[] = []): Promise<EngineProcess> {
  const sequences = extra.includes("--sequences") ? [] : ["--sequences", "2"];
  const engine = await spawnEngine(
    ["--model-preset", "test", ...sequences, "--context-size", "2048", "--nats-url", natsUrl, "--pool", `default/${POOL}`, "--pod-name", pod, "--heartbeat-ms", "250", ...extra],
    { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 90_000 },
  );
  t.teardown(() => engine.stop());
  return engine;
}

export async function startStack(t: Teardownable, options: { engines: number; routers: number; router?: Partial<RouterOptions>; engineArgs?: string[]; nats?: NatsServerOptions }): Promise<Stack> {
  const nats = await startNatsServer(t, options.nats);
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const apps = await openAppsBucket(nc);
  const pods = Array.from({ length: options.engines }, (_, i) => `engine-${String.fromCharCode(97 + i)}`);
  const engines = new Map<string, EngineProcess>();
  // One at a time: two model loads at once on two cores starve everything else.
  for (const pod of pods) engines.set(pod, await spawnPoolEngine(t, nats.url, pod, options.engineArgs));
  const routers: Router[] = [];
  for (let i = 0; i < options.routers; i++) {
    const router = await startRouter(
      routerOptions({ natsUrl: nats.url, routerId: `router-${i}`, maxBodyBytes: 65_536, upstreamTimeoutMs: 20_000, presenceMs: 500, logLevel: "silent", ...options.router }),
      log.child({ router: i }),
    );
    t.teardown(() => router.close());
    routers.push(router);
  }
  const stack: Stack = {
    nats,
    nc,
    apps,
    engines,
    routers,
    url: (i) => `http://127.0.0.1:${routers[i]!.port}`,
    async putApp(config) {
      await apps.put(appKey(config.namespace, config.name), JSON.stringify(config));
      await eventually(() => routers.every((r) => r.apps.get(config.namespace, config.name)?.config.systemPrompt === config.systemPrompt && r.apps.get(config.namespace, config.name)?.config.interrupts.userInterrupts === config.interrupts.userInterrupts), 5_000);
    },
    async waitEngines(n, ms = 10_000) {
      const ok = await eventually(() => routers.every((r) => r.engines.loads("default", POOL).length === n), ms);
      if (!ok) throw new Error(`routers do not see ${n} engines: ${routers.map((r) => r.engines.loads("default", POOL).map((e) => e.pod).join(",")).join(" | ")}`);
    },
  };
  await stack.waitEngines(options.engines, 20_000);
  return stack;
}

export async function postJson(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), ...(signal !== undefined ? { signal } : {}) });
}

export interface Opened {
  id: string;
  eventsUrl: string;
  engine: string;
  placement: { reason: string; matchedSegments: number; segments: number; retries: number; queuedMs: number };
}

/** Opens a session of `app` through router `base`; throws with the body on failure. */
export async function openSession(base: string, app: string, body: Record<string, unknown>): Promise<Opened> {
  const res = await postJson(`${base}/v1/apps/default/${app}/sessions`, body);
  if (res.status !== 201) throw new Error(`open ${app}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Opened;
}

/** Collects a session's events through router `base` until the stream ends. */
export async function streamEvents(base: string, app: string, id: string, signal?: AbortSignal, onEvent?: (e: SessionEvent) => void): Promise<SessionEvent[]> {
  const res = await fetch(`${base}/v1/apps/default/${app}/sessions/${id}/events`, { headers: { accept: "text/event-stream" }, ...(signal ? { signal } : {}) });
  if (!res.ok || res.body === null) throw new Error(`events ${id}: ${res.status} ${await res.text()}`);
  const events: SessionEvent[] = [];
  for await (const e of readEventStream<SessionEvent>(res.body)) {
    events.push(e);
    onEvent?.(e);
  }
  return events;
}

/** A short scripted session: a few tokens of text, then EOS. */
export const QUICK = { prompt: "Say hi.", policy: { type: "text", pieces: ["Hi", " there."] } };

/** A session that waits on a long sleep call (holds its sequence until cancelled). */
export function longSession(ms = 60_000): Record<string, unknown> {
  return {
    prompt: "Wait for the long job.",
    policy: { type: "lpt-dag", calls: [{ id: "wait", tool: "sleep", arguments: { ms }, dependsOn: [], estimatedLatencyMs: ms }], finalText: "done" },
    kvPolicy: "keep",
  };
}

/** Opens a `longSession` through router `base`, resolved once it is paused on its tool call; `end` deletes it and closes its stream. */
export async function parkedSession(t: Teardownable, base: string, app: string): Promise<Opened & { end: () => Promise<void> }> {
  const opened = await openSession(base, app, longSession());
  const stop = new AbortController();
  let calling = false;
  const events = streamEvents(base, app, opened.id, stop.signal, (e) => {
    if (e.type === "call") calling = true;
  }).catch(() => []);
  const end = async (): Promise<void> => {
    await fetch(`${base}/v1/apps/default/${app}/sessions/${opened.id}`, { method: "DELETE" });
    stop.abort();
    await events;
  };
  t.teardown(() => stop.abort());
  if (!(await eventually(() => calling, 20_000))) throw new Error(`session ${opened.id} never paused on its call`);
  return { ...opened, end };
}
