/**
 * @module Scale down without loss through the router: a real nats-server,
 * two real engine processes and a router. An engine sent SIGTERM announces
 * it is draining in its heartbeat: the router places new sessions on the
 * other engine, while the draining engine's live session streams on through
 * the router to its normal end; then the engine exits 0.
 */
import t from "tap";
import type { SessionEvent } from "../../common/src/index.js";
import { waitFor } from "../helpers/wait.js";
import { appConfig, longSession, openSession, POOL, QUICK, startStack, streamEvents } from "./fixtures.js";

t.setTimeout(300_000);

const stack = await startStack(t, { engines: 2, routers: 1, engineArgs: ["--drain-grace-ms", "120000"] });
const base = stack.url(0);
await stack.putApp(appConfig("drainer"));
const router = stack.routers[0]!;

t.test("new sessions go to the engine that is not draining; the draining one's session finishes", async (t) => {
  const first = await openSession(base, "drainer", longSession(6_000));
  const draining = stack.engines.get(first.engine)!;
  const exit = new Promise<number | null>((r) => draining.child.once("exit", (code) => r(code)));
  let second: { engine: string; events: SessionEvent[] } | undefined;
  let seenDraining: boolean | undefined;
  const events = await streamEvents(base, "drainer", first.id, undefined, (e) => {
    if (e.type !== "trap" || second !== undefined) return;
    draining.child.kill("SIGTERM");
    second = { engine: "", events: [] };
    // While the first session's call sleeps: the router hears "draining", then places elsewhere.
    void (async () => {
      await waitFor("the router to see the engine draining", () => router.engines.loads("default", POOL).every((l) => l.pod !== first.engine));
      seenDraining = router.engines.find("default", first.engine)?.draining;
      const next = await openSession(base, "drainer", QUICK);
      second = { engine: next.engine, events: await streamEvents(base, "drainer", next.id) };
    })();
  });
  await waitFor("the second session to finish", () => second !== undefined && second.events.length > 0 && second.events.at(-1)?.type === "done");
  t.equal(seenDraining, true, "the heartbeat says draining (and the engine stays known, so its streams stay routed)");
  t.not(second?.engine, first.engine, "the new session was placed on the engine that is not draining");
  t.equal(second?.events.at(-1)?.type === "done" ? (second.events.at(-1) as { reason: string }).reason : undefined, "eos");
  const done = events.at(-1);
  t.equal(done?.type === "done" ? done.reason : done?.type, "eos", "the draining engine's session finished normally through the router");
  t.notOk(events.some((e) => e.type === "error"), "no engine_lost or draining error");
  t.equal(await exit, 0, "the drained engine exited 0");
});
