/**
 * The prefix slack on real processes (a nats-server, two engine processes of
 * four sequences on the `test` model, two router replicas): at low load the
 * CHWBL bound rounds tight (2 sessions on the prefix's engine, 0 on the
 * other: a third is over it), and the engine holding the app's prefix keeps
 * the session within the slack instead of sending it to prefill the whole
 * prompt cold on the idle engine. With the default slack (2) the engine keeps
 * the third and the fourth, its last free sequence; with `--prefix-slack 1`
 * the fourth is past the slack and spills; with 0 the third spills, as the
 * bound alone says.
 */
import t, { type Test } from "tap";
import { prefixHashChain } from "../../common/src/index.js";
import { mergeSessionRequest } from "../../router/src/request-merge.js";
import { eventually } from "../helpers/wait.js";
import { appConfig, longSession, openSession, POOL, QUICK, startStack, streamEvents, type Opened } from "./fixtures.js";

t.setTimeout(300_000);

/** A stack whose routers take `prefixSlack` (absent: the router's default). */
async function stackWith(t: Test, prefixSlack?: number) {
  const stack = await startStack(t, { engines: 2, routers: 2, engineArgs: ["--sequences", "4"], router: prefixSlack === undefined ? {} : { prefixSlack } });
  const app = appConfig("alpha");
  await stack.putApp(app);
  const prefix = prefixHashChain({ messages: [{ role: "system", content: app.systemPrompt }], tools: app.tools })[1]!;
  const [r0, r1] = [stack.url(0), stack.url(1)];
  // The app's prefix resident on one engine, E, with nothing running.
  const warm = await openSession(r0, "alpha", QUICK);
  await streamEvents(r0, "alpha", warm.id);
  const E = warm.engine;
  const loadOf = (pod: string): number | undefined => stack.routers[0]!.engines.loads("default", POOL).find((e) => e.pod === pod)?.load;
  t.ok(
    await eventually(() => stack.routers.every((r) => r.engines.loads("default", POOL).find((e) => e.pod === E)?.blocks.leading([prefix]).matched === 1) && loadOf(E) === 0, 10_000),
    "both replicas see the prefix on E, and E idle",
  );
  const opened: Opened[] = [];
  const open = async (router: string): Promise<Opened> => {
    const s = await openSession(router, "alpha", longSession());
    opened.push(s);
    return s;
  };
  // Cancel the long sessions so the engines stop at once.
  // The long sessions' chain in cells on E as both replicas see it (not still being prefilled there: the slack applies only then).
  const chain = mergeSessionRequest(app, longSession()).chain;
  const filledOnE = (): boolean =>
    stack.routers.every((r) => {
      const held = r.engines.loads("default", POOL).find((e) => e.pod === E)?.blocks.leading(chain);
      return held !== undefined && held.matched > 0 && held.filled === held.matched;
    });
  const closeAll = (): Promise<unknown> => Promise.all(opened.map((s) => fetch(`${r0}/v1/apps/default/alpha/sessions/${s.id}`, { method: "DELETE" }).catch(() => undefined)));
  return { r0, r1, E, loadOf, filledOnE, open, closeAll };
}

t.test("with the default slack the prefix's engine keeps the third and fourth sessions, its last free sequence", async (t) => {
  const { r0, r1, E, loadOf, filledOnE, open, closeAll } = await stackWith(t);
  for (const router of [r0, r1]) t.equal((await open(router)).engine, E, "under the bound: the prefix's engine");
  t.ok(await eventually(() => loadOf(E) === 2 && filledOnE(), 5_000), "the heartbeat shows both, their prompt in E's cells");
  const third = await open(r0);
  t.equal(third.engine, E, "within the slack");
  t.equal(third.placement.reason, "prefix-slack");
  t.ok(await eventually(() => loadOf(E) === 3 && filledOnE(), 5_000), "the heartbeat shows all three, their prompt in E's cells");
  // Loads 3 + 0: the bound ceil(1.25 * 4 / 2) = 3 is passed, the even share ceil(4 / 2) = 2 plus the slack 2 is not.
  const fourth = await open(r1);
  t.equal(fourth.engine, E, "E's last free sequence, rather than prefilling the prompt cold on the idle engine");
  t.equal(fourth.placement.reason, "prefix-slack");
  t.equal(fourth.placement.retries, 0, "chosen by placement, not by a refusal");
  t.ok(fourth.placement.matchedSegments >= 2, "system prompt and tools resident there");
  await closeAll();
});

t.test("with --prefix-slack 1 the prefix's engine keeps a third session; the fourth spills", async (t) => {
  const { r0, r1, E, loadOf, filledOnE, open, closeAll } = await stackWith(t, 1);
  for (const router of [r0, r1]) t.equal((await open(router)).engine, E, "under the bound: the prefix's engine");
  t.ok(await eventually(() => loadOf(E) === 2 && filledOnE(), 5_000), "the heartbeat shows both, their prompt in E's cells");
  // Loads 2 + 0: the bound ceil(1.25 * 3 / 2) = 2 is passed, the even share ceil(3 / 2) = 2 plus the slack 1 is not.
  const third = await open(r0);
  t.equal(third.engine, E, "forks the resident prefix rather than prefilling the prompt cold on the idle engine");
  t.equal(third.placement.reason, "prefix-slack");
  t.ok(third.placement.matchedSegments >= 2, "system prompt and tools resident there");
  t.ok(await eventually(() => loadOf(E) === 3, 5_000), "the heartbeat shows all three");
  // Loads 3 + 0: the bound ceil(1.25 * 4 / 2) = 3 and the even share ceil(4 / 2) + 1 = 3: the fourth would be past both.
  const fourth = await open(r1);
  t.not(fourth.engine, E, "past the slack: spilled, though E has a free sequence");
  t.equal(fourth.placement.reason, "prefix-spill");
  t.equal(fourth.placement.retries, 0, "chosen by placement, not by a refusal");
  const metrics = await (await fetch(`${r0}/metrics`)).text();
  t.match(metrics, /interlace_router_placements_total\{policy="prefix-affinity",reason="prefix-slack"\} 1/);
  await closeAll();
});

t.test("with --prefix-slack 0 the bound alone spills the third", async (t) => {
  const { r0, r1, E, loadOf, filledOnE, open, closeAll } = await stackWith(t, 0);
  for (const router of [r0, r1]) t.equal((await open(router)).engine, E);
  t.ok(await eventually(() => loadOf(E) === 2 && filledOnE(), 5_000));
  const third = await open(r0);
  t.not(third.engine, E, "over the bound: spilled");
  t.equal(third.placement.reason, "prefix-spill");
  await closeAll();
});
