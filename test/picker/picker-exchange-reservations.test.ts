/**
 * How long a pick counts against its engine, through the picker's own
 * ext_proc exchange (router/src/picker/ext-proc-exchange.ts) fed the
 * messages Envoy sends, over a real EngineRegistry: alone, and sharing
 * reservations with another front door on a real nats-server. A chat
 * completion's pick stops counting when the engine's answer ends (its work
 * is over), not at the engine's next heartbeat; a created session's pick
 * keeps counting after its answer and its stream have ended, until a
 * heartbeat shows the session; a refused pick stops counting at once.
 */
import t, { type Test } from "tap";
import { connect } from "@nats-io/transport-node";
import { openReservationsBucket, type EngineHeartbeat } from "../../common/src/protocol/index.js";
import { EngineRegistry } from "../../router/src/engine-registry.js";
import { EndpointPicker } from "../../router/src/picker/endpoint-picker.js";
import { ExtProcExchange } from "../../router/src/picker/ext-proc-exchange.js";
import type { HttpHeaders } from "../../router/src/picker/ext-proc-service.js";
import { PickerMetrics } from "../../router/src/picker/metrics.js";
import { SharedReservations } from "../../router/src/shared-reservations.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { eventually } from "../helpers/wait.js";
import { appConfig, log } from "../router/fixtures.js";
import { exchangeContext, pool } from "./fixtures.js";

const app = appConfig("alpha");

function heartbeat(busy: number): EngineHeartbeat {
  return { pod: "e1", endpoint: "http://10.0.0.1:8080", pool, model: "m", ready: true, freeSequences: 4 - busy, totalSequences: 4, queuedSessions: 0, activeSessions: busy, kvCellsUsed: 0, kvCellsTotal: 1000, tokensPerSecond: 0, prefixes: [], at: Date.now() };
}

function headers(record: Record<string, string>, endOfStream = false): HttpHeaders {
  return { headers: { headers: Object.entries(record).map(([key, value]) => ({ key, rawValue: Buffer.from(value) })) }, endOfStream };
}

/** One HTTP request through the exchange up to the engine's answer headers; returns the exchange to go on with. */
async function routed(engines: EngineRegistry, path: string, body: unknown, status: number): Promise<ExtProcExchange> {
  const metrics = new PickerMetrics();
  const ctx = exchangeContext(new EndpointPicker({ engines, pool, policy: "prefix-affinity", loadFactor: 1.25, prefixSlack: 0, prefixWaitMs: 0, retryAfterSeconds: 1, maxEndpoints: 1, metrics }), app, metrics);
  const sent: unknown[] = [];
  const exchange = new ExtProcExchange(ctx, (r) => sent.push(r));
  await exchange.handle({ request: "requestHeaders", requestHeaders: headers({ ":method": "POST", ":path": path, "content-type": "application/json" }) });
  await exchange.handle({ request: "requestBody", requestBody: { body: Buffer.from(JSON.stringify(body)), endOfStream: true } });
  if (!sent.some((r) => (r as { requestHeaders?: unknown }).requestHeaders !== undefined)) throw new Error(`not routed: ${JSON.stringify(sent)}`);
  await exchange.handle({ request: "responseHeaders", responseHeaders: headers({ ":status": String(status) }) });
  return exchange;
}

const completion = { model: "any-model", messages: [{ role: "user", content: "hello" }], stream: true };

async function cases(t: Test, engines: EngineRegistry, load: () => number, settle: (n: number) => Promise<boolean>): Promise<void> {
  const c = await routed(engines, "/v1/chat/completions", completion, 200);
  t.equal(load(), 1, "a streaming completion counts while it runs");
  await c.handle({ request: "responseBody", responseBody: { body: Buffer.from("data: {}\n\n"), endOfStream: false } });
  t.equal(load(), 1, "still running");
  await c.handle({ request: "responseBody", responseBody: { body: Buffer.from("data: [DONE]\n\n"), endOfStream: true } });
  t.ok(await settle(0), "its answer ended: no longer counted, before any heartbeat");
  c.close();
  t.ok(await settle(0), "and its stream's end changes nothing");

  const cut = await routed(engines, "/v1/chat/completions", completion, 200);
  await cut.handle({ request: "responseBody", responseBody: { body: Buffer.from("data: {}\n\n"), endOfStream: false } });
  cut.close();
  t.ok(await settle(0), "a completion whose stream broke mid-answer no longer counts either");

  const refused = await routed(engines, "/v1/chat/completions", completion, 429);
  t.ok(await settle(0), "refused by the engine: not counted");
  refused.close();

  const s = await routed(engines, "/v1/apps/default/alpha/sessions", { prompt: "hi" }, 201);
  await s.handle({ request: "responseBody", responseBody: { body: Buffer.from(JSON.stringify({ id: "abc" })), endOfStream: true } });
  s.close();
  await new Promise((r) => setTimeout(r, 100));
  t.equal(load(), 1, "a created session runs on after its answer and its stream: still counted");
  engines.update(heartbeat(1));
  t.ok(await settle(1), "a heartbeat showing it counts it, and the pick no more (not twice)");
}

t.test("alone: the registry's own accounting", async (t) => {
  const engines = new EngineRegistry({ ttlMs: 60_000, log });
  engines.update(heartbeat(0));
  const load = (): number => engines.loads(pool.namespace, pool.name)[0]!.load;
  await cases(t, engines, load, (n) => Promise.resolve(load() === n));
});

t.test("sharing reservations with another front door on NATS: both see the pick end", async (t) => {
  const nats = await startNatsServer(t);
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const kv = await openReservationsBucket(nc);
  const door = async (): Promise<EngineRegistry> => {
    const engines = new EngineRegistry({ ttlMs: 60_000, log });
    const shared = new SharedReservations({ kv, ttlMs: 15_000, log, heartbeatSeenAt: (ns, p, pod) => engines.heartbeatSeenAt(ns, p, pod) });
    const watch = await kv.watch({ key: ">" });
    t.teardown(() => watch.stop());
    void (async () => {
      for await (const e of watch) shared.apply(e);
    })();
    engines.shareReservations(shared);
    engines.update(heartbeat(0));
    return engines;
  };
  const [picker, other] = [await door(), await door()];
  const loadOf = (engines: EngineRegistry): number => engines.loads(pool.namespace, pool.name)[0]!.load;
  // The other front door hears the same heartbeats.
  const update = picker.update.bind(picker);
  picker.update = (h, seenAt) => {
    update(h, seenAt);
    other.update(h, seenAt);
  };
  await cases(t, picker, () => loadOf(picker), async (n) => (await eventually(() => loadOf(picker) === n, 5_000)) && (await eventually(() => loadOf(other) === n, 5_000)));
});
