/**
 * Hot-prefix warming from the endpoint picker, the other front door: behind
 * a real Envoy (hack/envoy.ts), over a real nats-server and two engine
 * processes on the `test` model with a prefix store of two. An app whose
 * sessions keep arriving through the gateway is held on one engine by
 * prefix affinity; the picker asks the other, idle engine to prefill the
 * app's shared prefix into its store, as the router does
 * (test/router/prefix-warm.test.ts), and a session spilled there forks it
 * instead of prefilling the whole prompt. With warming off (the control,
 * another picker over the same engines) no warm is asked.
 */
import t, { type Test } from "tap";
import { createLogger, prefixHashChain, type SessionEvent } from "../../common/src/index.js";
import { EnvoyGateway } from "../../hack/envoy.js";
import { pickerOptions, startPicker, type Picker } from "../../router/src/picker/index.js";
import { appConfig, longSession, openSession, QUICK, startStack, streamEvents, type Opened } from "../router/fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(300_000);

const log = createLogger("test", process.env["LOG_LEVEL"] ?? "silent");
// `pin`: a session waiting on its tool keeps its sequence, so three sessions of one app fill an engine of two and the third spills.
const stack = await startStack(t, { engines: 2, routers: 0, engineArgs: ["--kv-retention", "pin", "--prefix-store", "2"] });
const system = (name: string): string => `You are ${name}, the support agent of a bicycle shop. ${"Answer briefly, check the order system, and use tools when useful. ".repeat(8)}`;
const alpha = appConfig("alpha", { systemPrompt: system("alpha") });
const beta = appConfig("beta", { systemPrompt: system("beta") });
await stack.putApp(alpha);
await stack.putApp(beta);
const pool = { namespace: "default", name: "pool" };

async function gateway(name: string, prefixWarmSessions?: number): Promise<{ picker: Picker; url: string }> {
  const picker = await startPicker(pickerOptions({ natsUrl: stack.nats.url, pool, prefixWaitMs: 0, ...(prefixWarmSessions !== undefined ? { prefixWarmSessions } : {}), logLevel: "silent" }), log.child({ picker: name }));
  t.teardown(() => picker.close());
  const envoy = await EnvoyGateway.start({ pickerPorts: [picker.grpcPort], messageTimeoutMs: 60_000 });
  t.teardown(() => envoy.stop());
  await eventually(() => picker.engines.loads(pool.namespace, pool.name).length === 2 && picker.apps.get("default", "beta") !== undefined, 10_000);
  return { picker, url: envoy.url };
}
const warming = await gateway("warming");
const plain = await gateway("plain", 0);

const shared = (app: typeof alpha): string[] => prefixHashChain({ messages: [{ role: "system", content: app.systemPrompt }], tools: app.tools });
const holds = (picker: Picker, pod: string, chain: string[]): boolean => picker.engines.loads(pool.namespace, pool.name).find((e) => e.pod === pod)?.blocks.leading(chain).matched === chain.length;
const warms = async (url: string): Promise<string | undefined> => /interlace_picker_prefix_warms_total\{outcome="warmed"\} (\d+)/.exec(await (await fetch(url)).text())?.[1];
const pickerMetrics = (p: Picker): string => `http://127.0.0.1:${p.port}/metrics`;
const usage = (events: SessionEvent[]): { promptTokens: number; prefilledTokens: number } => {
  const done = events.find((e) => e.type === "done");
  if (done === undefined || done.type !== "done") throw new Error(`no done event: ${JSON.stringify(events.slice(-2))}`);
  return done.usage;
};

/** Three quick sessions of an app through a gateway, one after another (the app turns hot), each once the picker sees the engines idle again. */
async function burst(t: Test, gw: { picker: Picker; url: string }, app: typeof alpha): Promise<string> {
  let first = "";
  for (let i = 0; i < 3; i++) {
    const s = await openSession(gw.url, app.name, QUICK);
    first ||= s.engine;
    t.equal(s.engine, first, `quick session ${i + 1} of ${app.name} on its prefix's engine (${s.placement.reason})`);
    await streamEvents(gw.url, app.name, s.id);
    await eventually(() => holds(gw.picker, first, shared(app)) && gw.picker.engines.loads(pool.namespace, pool.name).every((e) => e.load === 0), 5_000);
  }
  return first;
}

t.test("control, warming off: the hot app's prefix stays on one engine and no warm is asked", async (t) => {
  const first = await burst(t, plain, beta);
  const other = [...stack.engines.keys()].find((p) => p !== first)!;
  await new Promise((r) => setTimeout(r, 2_000));
  t.notOk(holds(plain.picker, other, shared(beta)), "beta's prefix is not on the other engine");
  t.equal(await warms(pickerMetrics(plain.picker)), undefined, "no warm counted");
});

t.test("warming on: the picker warms the hot app's prefix onto the idle engine, and a session spilled there forks it", async (t) => {
  const first = await burst(t, warming, alpha);
  const other = [...stack.engines.keys()].find((p) => p !== first)!;
  t.ok(await eventually(async () => (await warms(pickerMetrics(warming.picker))) === "1", 30_000), "one warm, answered warmed");
  t.ok(await eventually(() => holds(warming.picker, other, shared(alpha)), 5_000), `alpha's prefix warmed onto ${other} before any alpha session went there`);
  t.match(await (await fetch(`${stack.engines.get(other)!.url}/metrics`)).text(), /interlace_engine_prefix_warms_total\{outcome="warmed"\} 1/, "the engine counts it");

  const opened: Opened[] = [];
  for (let i = 0; i < 3; i++) opened.push(await openSession(warming.url, "alpha", longSession(1500)));
  const sessions = await Promise.all(opened.map(async (s) => ({ ...s, usage: usage(await streamEvents(warming.url, "alpha", s.id)) })));
  const there = sessions.filter((s) => s.engine === other);
  t.ok(there.length >= 1, `sessions on the warmed engine: ${sessions.map((s) => `${s.engine} ${s.placement.reason}`).join(", ")}`);
  for (const s of there) t.ok(s.usage.prefilledTokens < 0.3 * s.usage.promptTokens, `session on ${other} prefilled ${s.usage.prefilledTokens} of ${s.usage.promptTokens}: the warmed prefix was forked`);
});
