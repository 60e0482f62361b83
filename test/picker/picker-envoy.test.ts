/**
 * The endpoint picker behind a real Envoy (hack/tools/85-envoy.sh), against
 * a real nats-server and two real engine processes on the `test` model, on
 * loopback. Envoy runs GAIE's data-plane shape (hack/envoy.ts): ext_proc to
 * the picker over HTTP/2 with FULL_DUPLEX_STREAMED bodies, `envoy.lb`
 * metadata received, an ORIGINAL_DST cluster that connects where
 * `x-gateway-destination-endpoint` says. Clients use the router's own API
 * through Envoy's port:
 *
 * - sessions sharing a prefix go to the engine that holds it, and that
 *   engine's prefill counters show the reuse; a router over the same
 *   heartbeats places the next one there too;
 * - the load bound spills;
 * - streaming chat completions, session events, interrupts and cancels pass
 *   through Envoy to the session's own engine;
 * - a subset hint is respected; no ready engine gives 503;
 * - the picker restarts under load without failing requests that it has
 *   not picked yet (Envoy opens their ext_proc stream again once it is
 *   back), and the streams it had picked finish.
 */
import t from "tap";
import { createLogger, prefixHashChain, type SessionEvent } from "../../common/src/index.js";
import { EnvoyGateway } from "../../hack/envoy.js";
import { pickerOptions, startPicker, type Picker, type PickerOptions } from "../../router/src/picker/index.js";
import { appConfig, longSession, openSession, postJson, QUICK, startStack, streamEvents } from "../router/fixtures.js";
import { eventually } from "../helpers/wait.js";
import { parsePickTiming } from "../../router/src/server-timing.js";

t.setTimeout(420_000);

const log = createLogger("test", process.env["LOG_LEVEL"] ?? "silent");
const stack = await startStack(t, { engines: 2, routers: 1 });
const alpha = appConfig("alpha");
await stack.putApp(alpha);
const pool = { namespace: "default", name: "pool" };
// A request no engine has a free sequence for waits up to 60 s for one (this machine may be slow; the test
// is about placement and restarts, not shedding), and Envoy gives the picker that long to answer.
const options: PickerOptions = pickerOptions({ natsUrl: stack.nats.url, pool, prefixWaitMs: 60_000, logLevel: "silent" });
let picker: Picker = await startPicker(options, log.child({ picker: 0 }));
t.teardown(() => picker.close());
const envoy = await EnvoyGateway.start({ pickerPorts: [picker.grpcPort], subsetHintHeader: "x-test-subset-hint", messageTimeoutMs: 90_000 });
t.teardown(() => envoy.stop());
const gw = envoy.url;
const router = stack.url(0);
await eventually(() => picker.engines.loads(pool.namespace, pool.name).length === 2, 10_000);

const endpointOf = (pod: string): string => new URL(stack.engines.get(pod)!.url).host;
const alphaPrefix = prefixHashChain({ messages: [{ role: "system", content: alpha.systemPrompt }], tools: alpha.tools })[1]!;
const holders = (): string[] => picker.engines.loads(pool.namespace, pool.name).filter((e) => e.blocks.leading([alphaPrefix]).matched === 1).map((e) => e.pod);
const idle = (): boolean => picker.engines.loads(pool.namespace, pool.name).every((e) => e.load === 0 && e.free === e.capacity);

async function prefilled(pod: string): Promise<number> {
  const text = await (await fetch(`${stack.engines.get(pod)!.url}/metrics`)).text();
  return Number(/^interlace_engine_tokens_prefilled_total (\d+)/m.exec(text)?.[1] ?? "0");
}

function usageOf(events: SessionEvent[]): { promptTokens: number; prefilledTokens: number } {
  const done = events.at(-1);
  if (done?.type !== "done") throw new Error(`the session did not finish: ${JSON.stringify(done)}`);
  return done.usage as { promptTokens: number; prefilledTokens: number };
}

t.test("sessions sharing a prefix go through Envoy to the engine holding it; its prefill counter shows the reuse", async (t) => {
  const first = await openSession(gw, "alpha", QUICK);
  t.match(first.id, new RegExp(`^${first.engine}\\.`), "a routed session id, as the router issues");
  t.equal(usageOf(await streamEvents(gw, "alpha", first.id)).prefilledTokens > 0, true);
  t.ok(await eventually(() => holders().includes(first.engine), 5_000), "the engine advertises alpha's prefix");
  t.ok(await eventually(idle, 5_000));
  const other = [...stack.engines.keys()].find((p) => p !== first.engine)!;
  const before = { holder: await prefilled(first.engine), other: await prefilled(other) };
  let prompts = 0;
  for (let i = 0; i < 3; i++) {
    const s = await openSession(gw, "alpha", { ...QUICK, prompt: `Question ${i} through the gateway` });
    t.equal(s.engine, first.engine, "placed where the prefix is resident");
    t.equal(s.placement.reason, "prefix");
    t.ok(s.placement.matchedSegments >= 2, "system prompt and tool block matched");
    const usage = usageOf(await streamEvents(gw, "alpha", s.id));
    t.ok(usage.prefilledTokens < usage.promptTokens / 2, `most of the prompt reused (${usage.prefilledTokens} of ${usage.promptTokens} prefilled)`);
    prompts += usage.promptTokens;
    await eventually(idle, 5_000);
  }
  const viaRouter = await openSession(router, "alpha", { ...QUICK, prompt: "And one through the router" });
  t.equal(viaRouter.engine, first.engine, "the router, reading the same heartbeats, places alike");
  t.equal(viaRouter.placement.reason, "prefix");
  await streamEvents(router, "alpha", viaRouter.id);
  const after = { holder: await prefilled(first.engine), other: await prefilled(other) };
  t.ok(after.holder - before.holder < prompts / 2, `the holder prefilled ${after.holder - before.holder} tokens for ${prompts} prompt tokens through the gateway`);
  t.equal(after.other, before.other, "the other engine prefilled nothing");
  const metrics = await (await fetch(`http://127.0.0.1:${picker.port}/metrics`)).text();
  t.match(metrics, /interlace_picker_picks_total\{reason="prefix"\} [3-9]/);
  const stats = await envoy.stats("ext_proc");
  t.equal(stats.get("http.gateway.ext_proc.streams_failed") ?? 0, 0, "no ext_proc stream failed");
  await eventually(idle, 5_000);
});

t.test("both front doors report their own pick in Server-Timing, the same span", async (t) => {
  for (const [door, base] of [["envoy and the picker", gw], ["the router", router]] as const) {
    const res = await postJson(`${base}/v1/apps/default/alpha/sessions`, QUICK);
    t.equal(res.status, 201);
    const pick = parsePickTiming(res.headers.get("server-timing"));
    t.ok(pick !== undefined && pick >= 0, `${door}: Server-Timing ${res.headers.get("server-timing")}`);
    const s = (await res.json()) as { id: string };
    await streamEvents(base, "alpha", s.id);
  }
  // The picker tells only placed answers: its own refusals carry none.
  const bad = await postJson(`${gw}/v1/apps/default/alpha/sessions`, { prompt: "x", system: "mine" });
  t.equal(bad.status, 400);
  t.equal(bad.headers.get("server-timing"), null);
  await eventually(idle, 5_000);
});

t.test("a hot prefix's engine, full and past the bound: the session waits for it rather than prefilling cold on the other", async (t) => {
  const [holder] = holders();
  t.ok(holder !== undefined);
  const a = await openSession(gw, "alpha", longSession());
  const b = await openSession(gw, "alpha", longSession());
  t.same([a.engine, b.engine], [holder, holder], "up to the bound on the holder");
  t.ok(await eventually(() => picker.engines.loads(pool.namespace, pool.name).find((e) => e.pod === holder)?.load === 2, 5_000));
  // The holder full at 2 of 2, the other idle: the bound ceil(1.25 * 3 / 2) = 2 is passed. The picker holds the
  // request for the holder (up to its 60 s prefixWaitMs), and the holder frees a sequence as soon as a or b pauses
  // on its tool call (eta retention). A spill at once would prefill alpha's prompt cold on the idle engine.
  const c = await openSession(gw, "alpha", longSession());
  t.equal(c.engine, holder, "placed on the prefix's engine once a sequence freed there");
  t.match(c.placement.reason, /^prefix(-slack)?$/);
  for (const s of [a, b, c]) {
    const res = await fetch(`${gw}/v1/apps/default/alpha/sessions/${s.id}`, { method: "DELETE" });
    t.equal(res.status, 200, "DELETE through Envoy reaches the session's engine");
    t.equal(res.headers.get("x-interlace-engine"), s.engine);
  }
  t.ok(await eventually(idle, 5_000), "every sequence free again");
});

t.test("streaming chat completions, session events and interrupts pass through Envoy", async (t) => {
  const streamed = await postJson(`${gw}/v1/apps/default/alpha/chat/completions`, { messages: [{ role: "user", content: "hello" }], max_tokens: 4, stream: true });
  t.equal(streamed.status, 200);
  t.ok(streamed.headers.get("x-interlace-engine"), "the engine is named");
  const text = await streamed.text();
  t.match(text, /"object":"chat.completion.chunk"/);
  t.match(text, /data: \[DONE\]/);
  const plain = await postJson(`${gw}/v1/chat/completions`, { model: "alpha", messages: [{ role: "user", content: "hello" }], max_tokens: 4 });
  t.equal(plain.status, 200, "an OpenAI client naming the app as its model");
  t.ok(((await plain.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens > 50, "the app's system prompt and tools were merged in");
  const raw = await postJson(`${gw}/v1/chat/completions`, { model: "any-model", messages: [{ role: "user", content: "hello" }], max_tokens: 4 });
  t.equal(raw.status, 200, "any other model: passed through as sent");
  t.ok(((await raw.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens < 50, "nothing merged");
  // The scripted call `after` is ready only once the user interrupt `u1` is injected.
  const s = await openSession(gw, "alpha", {
    prompt: "Wait for my go.",
    policy: { type: "lpt-dag", calls: [{ id: "after", tool: "sleep", arguments: { ms: 1 }, dependsOn: [], estimatedLatencyMs: 1, afterInterrupt: "u1" }], finalText: "ok" },
  });
  const events = streamEvents(gw, "alpha", s.id);
  const intr = await postJson(`${gw}/v1/apps/default/alpha/sessions/${s.id}/interrupts`, { value: "go", id: "u1" });
  t.equal(intr.status, 202, await intr.clone().text());
  t.match(await intr.json(), { id: "u1", sessionId: s.id, engine: s.engine }, "the answer names the session as the client knows it");
  const seen = await events;
  t.ok(seen.some((e) => e.type === "interrupt" && e.kind === "user" && e.id === "u1"), "the user interrupt reached the session's engine and was injected");
  t.equal(seen.at(-1)?.type, "done");
  const bad = await postJson(`${gw}/v1/apps/default/alpha/sessions`, { prompt: "x", system: "mine" });
  t.equal(bad.status, 400, "the client's error, answered by the picker");
  t.match(await bad.text(), /"code":"bad_request"/);
  const unknown = await fetch(`${gw}/v1/apps/default/alpha/sessions/${s.engine}-gone.abc/events`);
  t.equal(unknown.status, 410, "a session whose engine is gone");
  await eventually(idle, 5_000);
});

t.test("a subset hint is respected", async (t) => {
  const post = (hint?: string): Promise<Response> =>
    fetch(`${gw}/v1/apps/default/alpha/sessions`, { method: "POST", headers: { "content-type": "application/json", ...(hint !== undefined ? { "x-test-subset-hint": hint } : {}) }, body: JSON.stringify(QUICK) });
  const open = async (hint?: string): Promise<string> => {
    const res = await post(hint);
    t.equal(res.status, 201);
    const s = (await res.json()) as { id: string; engine: string };
    await streamEvents(gw, "alpha", s.id);
    await eventually(idle, 5_000);
    return s.engine;
  };
  const chosen = await open();
  const other = [...stack.engines.keys()].find((p) => p !== chosen)!;
  t.equal(await open(endpointOf(other)), other, "only the allowed engine, though placement prefers the other");
  t.equal(await open(endpointOf(chosen)), chosen);
  const none = await post("10.255.255.1:8080");
  t.equal(none.status, 503, "nothing allowed is ready");
  t.match(await none.text(), /subset/);
});

t.test("no ready engine gives 503 through Envoy", async (t) => {
  const empty = await startPicker(pickerOptions({ natsUrl: stack.nats.url, pool: { namespace: "default", name: "empty" }, logLevel: "silent" }), log.child({ picker: "empty" }));
  t.teardown(() => empty.close());
  const gateway = await EnvoyGateway.start({ pickerPorts: [empty.grpcPort] });
  t.teardown(() => gateway.stop());
  const res = await postJson(`${gateway.url}/v1/chat/completions`, { model: "m", messages: [{ role: "user", content: "hi" }] });
  t.equal(res.status, 503);
  t.ok(res.headers.get("retry-after"));
  const body = (await res.json()) as { error: { code: string; message: string } };
  t.equal(body.error.code, "no_engine");
  t.match(body.error.message, /EnginePool default\/empty has no ready engine/);
});

t.test("the picker restarts under load: requests not yet picked wait for it, picked ones finish", async (t) => {
  const completion = async (i: number): Promise<string> => {
    const res = await postJson(`${gw}/v1/apps/default/alpha/chat/completions`, { messages: [{ role: "user", content: `request ${i}` }], max_tokens: 16, stream: true });
    return `${res.status} ${/data: \[DONE\]/.test(await res.text()) ? "complete" : "cut"}`;
  };
  const results: Promise<string>[] = [];
  for (let i = 0; i < 4; i++) results.push(completion(i));
  // Streams are open (picked, responses streaming through the picker) when it is told to stop.
  const closing = picker.close();
  for (let i = 4; i < 10; i++) {
    results.push(completion(i));
    await new Promise((r) => setTimeout(r, 40));
  }
  await closing;
  picker = await startPicker({ ...options, grpcPort: picker.grpcPort }, log.child({ picker: 1 }));
  const outcomes = await Promise.all(results);
  t.same(outcomes, Array.from({ length: 10 }, () => "200 complete"), "every request served in full");
  const stats = await envoy.stats("ext_proc");
  t.equal(stats.get("http.gateway.ext_proc.streams_failed") ?? 0, 0, "Envoy retried the streams it could not open");
});

t.test("a data plane that walks the fallback list (Envoy's override-host balancer) moves past an engine that just died", async (t) => {
  // A picker returning two endpoints, behind an Envoy that knows the pool's endpoints (as a gateway reads them from the InferencePool).
  const listing = await startPicker({ ...options, maxEndpoints: 2, prefixWaitMs: 0 }, log.child({ picker: "list" }));
  t.teardown(() => listing.close());
  const endpoints = [...stack.engines.values()].map((e) => ({ address: "127.0.0.1", port: Number(new URL(e.url).port) }));
  const walking = await EnvoyGateway.start({ pickerPorts: [listing.grpcPort], poolEndpoints: endpoints });
  t.teardown(() => walking.stop());
  await eventually(() => listing.engines.loads(pool.namespace, pool.name).length === 2, 10_000);
  // gamma's prefix lives on one engine only, so its next session is placed there first.
  const gamma = appConfig("gamma");
  await stack.putApp(gamma);
  await eventually(() => listing.apps.get("default", "gamma") !== undefined, 5_000);
  const first = await openSession(walking.url, "gamma", QUICK);
  await streamEvents(walking.url, "gamma", first.id);
  const gammaPrefix = prefixHashChain({ messages: [{ role: "system", content: gamma.systemPrompt }], tools: gamma.tools })[1]!;
  t.ok(await eventually(() => listing.engines.loads(pool.namespace, pool.name).find((e) => e.pod === first.engine)?.blocks.leading([gammaPrefix]).matched === 1, 5_000));
  // Both idle in the picker's view: a heartbeat still showing the first session running would let the
  // load bound put the other engine first (seen on a loaded machine), and nothing would need a retry.
  t.ok(await eventually(() => listing.engines.loads(pool.namespace, pool.name).every((e) => e.load === 0 && e.free === e.capacity), 10_000), "the picker sees both engines idle");
  // The engine holding it dies; its heartbeat is still fresh, so the picker still lists it first.
  stack.engines.get(first.engine)!.child.kill("SIGKILL");
  const res = await fetch(`${walking.url}/v1/apps/default/gamma/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(QUICK) });
  t.equal(res.status, 201, "Envoy retried the next endpoint on the list");
  const next = (await res.json()) as { id: string; engine: string };
  t.not(next.engine, first.engine, "served by the other engine, and the session id names it (the served endpoint, not the first pick)");
  t.equal(res.headers.get("x-gateway-destination-endpoint-served"), null, "the data plane's note to the picker does not reach the client");
  const events = await streamEvents(walking.url, "gamma", next.id);
  t.equal(events.at(-1)?.type, "done");
  const retries = await walking.stats("cluster.inference-pool.upstream_rq_retry");
  t.ok((retries.get("cluster.inference-pool.upstream_rq_retry") ?? 0) >= 1, "a retry, down the picker's list");
});
