/**
 * A lapsed heartbeat is a suspicion, not a verdict (router/src/engine-liveness.ts).
 * The NATS server dies and comes back while a session waits on a tool call:
 * the engine's heartbeats stop for longer than the router's TTL, but the
 * engine answers the router's probe, so the session's event stream is kept
 * and the session finishes (before, the router cut the stream at the TTL
 * and the engine, reading the closed stream as the client leaving, ended a
 * healthy session). An engine that stops answering too (SIGSTOP: its
 * heartbeats and its HTTP both stall, its connection stays open) is cut
 * with `engine_lost` once the probe times out. And after the restart, which
 * lost the memory buckets, the engine is placed on again.
 */
import t from "tap";
import type { SessionEvent } from "../../common/src/index.js";
import { appConfig, longSession, openSession, startStack, streamEvents } from "./fixtures.js";

const stack = await startStack(t, { engines: 1, routers: 1 });
await stack.putApp(appConfig("alive"));
const base = stack.url(0);

t.test("heartbeats lapse while NATS is down, the engine answers: the stream is kept and the session finishes", async (t) => {
  const s = await openSession(base, "alive", longSession(9_000));
  const seen: SessionEvent[] = [];
  let called: () => void = () => undefined;
  const call = new Promise<void>((r) => (called = r));
  const stream = streamEvents(base, "alive", s.id, undefined, (e) => {
    seen.push(e);
    if (e.type === "call") called();
  });
  await call;
  await stack.nats.restart(5_000, "SIGKILL");
  const events = await stream;
  const last = events.at(-1) as { type: string; reason?: string; code?: string; message?: string };
  t.same({ type: last.type, reason: last.reason }, { type: "done", reason: "eos" }, `the session finished (${JSON.stringify(last).slice(0, 300)})`);
  t.ok(events.some((e) => e.type === "interrupt"), "with its call's result");
  // The engines bucket is a memory bucket: the restart lost it. The engine creates it again with its next
  // heartbeat (common/protocol/reopening-kv.ts), and the router's watch, which a lost bucket leaves silent
  // rather than ended, sees the new bucket and restarts (router/src/kv-watch.ts): placement resumes.
  await stack.waitEngines(1, 20_000);
  t.pass("the router places on the engine again after the restart");
});

t.test("an engine that answers neither heartbeats nor probes is cut with engine_lost", async (t) => {
  const s = await openSession(base, "alive", longSession(60_000));
  const engine = stack.engines.get(s.engine)!;
  let called: () => void = () => undefined;
  const call = new Promise<void>((r) => (called = r));
  const stream = streamEvents(base, "alive", s.id, undefined, (e) => {
    if (e.type === "call") called();
  });
  await call;
  engine.child.kill("SIGSTOP");
  t.teardown(() => void engine.child.kill("SIGCONT"));
  const events = await stream;
  engine.child.kill("SIGCONT");
  const last = events.at(-1) as { type: string; code?: string; message?: string };
  t.equal(last.type, "error", "the stream ends with an error event");
  t.equal(last.code, "engine_lost");
  t.match(last.message, /no heartbeat for \d+ ms.*did not answer on http/, "naming the lapse and the failed probe");
});
