/**
 * A joining engine gets the hot app's prefix as it comes up, through the
 * real stack (nats-server, engine processes on the `test` model with a
 * prefix store of two, a router in this process): an app hot on the pool's
 * one engine (no second engine to warm: nothing is asked), then a second
 * engine starts, as a scale-up would start it. With no new arrival, the
 * router warms the app's shared prefix onto it when its first ready
 * heartbeat comes, and the session that spills there next forks it from the
 * prefix store instead of prefilling the whole prompt. Before, the warm
 * waited for the app's next arrival, which was itself the spilled session:
 * placed first, it prefilled cold while the warm was refused as busy.
 */
import t from "tap";
import { prefixHashChain, type SessionEvent } from "../../common/src/index.js";
import { appConfig, longSession, openSession, POOL, QUICK, spawnPoolEngine, startStack, streamEvents, type Opened } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(300_000);

const engineArgs = ["--kv-retention", "pin", "--prefix-store", "2"];
// A long window: the second engine's start must not outlast the app's heat on a loaded host.
const stack = await startStack(t, { engines: 1, routers: 1, router: { prefixWaitMs: 0, prefixWarmWindowMs: 120_000 }, engineArgs });
const base = stack.url(0);
const router = stack.routers[0]!;
const alpha = appConfig("alpha", { systemPrompt: `You are alpha, the support agent of a bicycle shop. ${"Answer briefly, check the order system, and use tools when useful. ".repeat(8)}` });
await stack.putApp(alpha);
const shared = prefixHashChain({ messages: [{ role: "system", content: alpha.systemPrompt }], tools: alpha.tools });
const holds = (pod: string): boolean => router.engines.loads("default", POOL).find((e) => e.pod === pod)?.blocks.leading(shared).matched === shared.length;
const warms = async (outcome: string): Promise<number> => Number(new RegExp(`interlace_router_prefix_warms_total\\{outcome="${outcome}"\\} (\\d+)`).exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? "0");
const usage = (events: SessionEvent[]): { promptTokens: number; prefilledTokens: number } => {
  const done = events.find((e) => e.type === "done");
  if (done === undefined || done.type !== "done") throw new Error(`no done event: ${JSON.stringify(events.slice(-2))}`);
  return done.usage;
};

t.test("the app turns hot on the one engine: nothing to warm", async (t) => {
  for (let i = 0; i < 3; i++) {
    const s = await openSession(base, "alpha", QUICK);
    t.equal(s.engine, "engine-a");
    await streamEvents(base, "alpha", s.id);
  }
  t.ok(await eventually(() => holds("engine-a"), 5_000), "engine-a holds alpha's prefix");
  t.equal(await warms("warmed"), 0, "a pool of one engine: no warm");
});

t.test("a second engine joins: warmed with the hot app's prefix at once, and the session spilled to it forks it", async (t) => {
  const joined = await spawnPoolEngine(t, stack.nats.url, "engine-b", engineArgs);
  stack.engines.set("engine-b", joined);
  await stack.waitEngines(2, 20_000);
  t.ok(await eventually(async () => (await warms("warmed")) === 1, 30_000), "one warm, answered warmed, with no new session of the app");
  t.ok(await eventually(() => holds("engine-b"), 5_000), "engine-b advertises alpha's prefix");

  // Two sessions that wait on a tool fill engine-a's two sequences (prefix affinity); the third spills to engine-b.
  const opened: Opened[] = [];
  for (let i = 0; i < 3; i++) opened.push(await openSession(base, "alpha", longSession(1500)));
  const sessions = await Promise.all(opened.map(async (s) => ({ ...s, usage: usage(await streamEvents(base, "alpha", s.id)) })));
  const spilled = sessions.filter((s) => s.engine === "engine-b");
  t.ok(spilled.length >= 1, `sessions on the joined engine: ${sessions.map((s) => `${s.engine} ${s.placement.reason}`).join(", ")}`);
  for (const s of spilled) t.ok(s.usage.prefilledTokens < 0.3 * s.usage.promptTokens, `session on engine-b prefilled ${s.usage.prefilledTokens} of ${s.usage.promptTokens}: the warmed prefix was forked`);
});
