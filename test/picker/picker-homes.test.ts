/**
 * Apps' home engines through the endpoint picker's ext_proc exchange, fed
 * the messages Envoy sends, over a real EngineRegistry of two engines: an
 * app's session is picked onto its home (the even assignment) and the
 * engine is told it is the home (`x-interlace-prefix-role`); a session
 * that cannot go there is a replica; a client's own role header never
 * reaches an engine; with homes off, no role is named.
 */
import t from "tap";
import { PREFIX_ROLE_HEADER, type EngineHeartbeat } from "../../common/src/protocol/index.js";
import { AppHomes, assignHomes } from "../../router/src/app-homes.js";
import { EngineRegistry } from "../../router/src/engine-registry.js";
import { EndpointPicker } from "../../router/src/picker/endpoint-picker.js";
import { ExtProcExchange } from "../../router/src/picker/ext-proc-exchange.js";
import type { HttpHeaders, ProcessingResponse } from "../../router/src/picker/ext-proc-service.js";
import { PickerMetrics } from "../../router/src/picker/metrics.js";
import { mergeSessionRequest } from "../../router/src/request-merge.js";
import { appConfig, log } from "../router/fixtures.js";
import { exchangeContext, pool } from "./fixtures.js";

const app = appConfig("alpha", { systemPrompt: `You are alpha. ${"Use the tools when useful. ".repeat(8)}` });

function heartbeat(pod: string, busy: number, total = 4): EngineHeartbeat {
  return { pod, endpoint: `http://10.0.0.${pod === "e0" ? 1 : 2}:8080`, pool, model: "m", ready: true, freeSequences: total - busy, totalSequences: total, queuedSessions: 0, activeSessions: busy, kvCellsUsed: 0, kvCellsTotal: 1000, tokensPerSecond: 0, prefixes: [], at: Date.now() };
}

function headers(record: Record<string, string>, endOfStream = false): HttpHeaders {
  return { headers: { headers: Object.entries(record).map(([key, value]) => ({ key, rawValue: Buffer.from(value) })) }, endOfStream };
}

/** Routes one request through a fresh exchange; returns the header mutation Envoy is told to apply. */
async function route(picker: EndpointPicker, path: string, body: unknown, extra: Record<string, string> = {}): Promise<{ set: Record<string, string>; remove: string[] }> {
  const sent: ProcessingResponse[] = [];
  const exchange = new ExtProcExchange(exchangeContext(picker, app), (r) => sent.push(r));
  await exchange.handle({ request: "requestHeaders", requestHeaders: headers({ ":method": "POST", ":path": path, "content-type": "application/json", ...extra }) });
  await exchange.handle({ request: "requestBody", requestBody: { body: Buffer.from(JSON.stringify(body)), endOfStream: true } });
  const mutation = sent.find((r) => r.requestHeaders !== undefined)?.requestHeaders?.response?.headerMutation;
  if (mutation === undefined) throw new Error(`not routed: ${JSON.stringify(sent)}`);
  exchange.close();
  return {
    set: Object.fromEntries((mutation.setHeaders ?? []).map((h) => [h.header.key, h.header.rawValue.toString()])),
    remove: mutation.removeHeaders ?? [],
  };
}

const picker = (engines: EngineRegistry, homes: boolean): EndpointPicker =>
  new EndpointPicker({ engines, pool, policy: "prefix-affinity", loadFactor: 1.25, prefixSlack: 0, prefixWaitMs: 0, retryAfterSeconds: 1, maxEndpoints: 1, metrics: new PickerMetrics(), ...(homes ? { appHomes: new AppHomes() } : {}) });

const SESSION = "/v1/apps/default/alpha/sessions";
const home = assignHomes([mergeSessionRequest(app, { prompt: "hi" }).affinityKey], ["e0", "e1"]).get(mergeSessionRequest(app, { prompt: "hi" }).affinityKey)!;
const other = home === "e0" ? "e1" : "e0";
const endpointOf = (pod: string): string => `10.0.0.${pod === "e0" ? 1 : 2}:8080`;

t.test("an app's session goes to its home, which is told so; one that cannot is a replica", async (t) => {
  const engines = new EngineRegistry({ ttlMs: 60_000, log });
  // The home busier than the other engine (within the bound): a miss still goes home.
  engines.update(heartbeat(home, 1));
  engines.update(heartbeat(other, 0));
  const p = picker(engines, true);
  const first = await route(p, SESSION, { prompt: "hi" });
  t.equal(first.set["x-gateway-destination-endpoint"], endpointOf(home));
  t.equal(first.set[PREFIX_ROLE_HEADER], "home");
  // The home full: the session goes to the other engine, a replica there.
  engines.update(heartbeat(home, 4));
  const spilled = await route(p, SESSION, { prompt: "hi" }, { [PREFIX_ROLE_HEADER]: "home" });
  t.equal(spilled.set["x-gateway-destination-endpoint"], endpointOf(other));
  t.equal(spilled.set[PREFIX_ROLE_HEADER], "replica", "the picker's word replaces the client's");
});

t.test("no home (homes off, or a request of no app): no role named, and a client's own is removed", async (t) => {
  const engines = new EngineRegistry({ ttlMs: 60_000, log });
  engines.update(heartbeat("e0", 0));
  engines.update(heartbeat("e1", 0));
  const off = await route(picker(engines, false), SESSION, { prompt: "hi" }, { [PREFIX_ROLE_HEADER]: "home" });
  t.equal(off.set[PREFIX_ROLE_HEADER], undefined);
  t.ok(off.remove.includes(PREFIX_ROLE_HEADER));
  const completion = await route(picker(engines, true), "/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "hello" }] }, { [PREFIX_ROLE_HEADER]: "replica" });
  t.equal(completion.set[PREFIX_ROLE_HEADER], undefined, "a completion of no app holds no home");
  t.ok(completion.remove.includes(PREFIX_ROLE_HEADER));
});
