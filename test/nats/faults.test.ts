/**
 * Faults against a real nats-server: a tool runner SIGKILLed mid-call (the
 * call is redelivered to another runner and completed once), a call whose
 * runners die on every delivery (the session gets a `max_deliveries` error),
 * a nats-server restart with calls in flight (engine and runners
 * reconnect; nothing is lost or duplicated), and a runner being removed
 * (SIGTERM): it finishes its in-flight call, or, past its drain timeout,
 * hands it back un-acked so JetStream redelivers it to another runner.
 */
import t from "tap";
import { startNatsServer } from "../helpers/nats-server.js";
import { BUILTIN_TOOLS, counterValue, makeCall, poolConfig, spawnRunner, startExecutor, startRunner } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

/** The builtin tools with `sleep` declared idempotent (so a redelivered call may run it again). */
const IDEMPOTENT_SLEEP = BUILTIN_TOOLS.map((tool) => (tool.name === "sleep" ? { ...tool, idempotent: true } : tool));

t.test("a runner SIGKILLed mid-call: an idempotent call is redelivered and completed exactly once", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const config = poolConfig({ ackWaitMs: 1_500, maxDeliver: 3, concurrency: 2, tools: IDEMPOTENT_SLEEP });
  const a = await spawnRunner(t, server.url, config, "runner-a");

  const pending = executor.execute(makeCall("s1", "sleep", { ms: 1_000, result: "done" }, 30_000));
  t.ok(await eventually(async () => (await a.metric("interlace_toolrunner_calls_in_flight")) === 1), "runner A is running the call");
  await a.kill("SIGKILL");

  const b = await startRunner(t, server.url, config, { runnerId: "runner-b" });
  const r = await pending;
  t.equal(r.ok, true, "the call completed");
  t.equal(r.output, "done");
  t.equal(await counterValue(b.metrics.redeliveries), 1, "runner B got it as a redelivery");
  t.equal(await counterValue(b.metrics.calls, { outcome: "ok" }), 1);
  // Give a stray second completion time to arrive: there must be none.
  const echo = await executor.execute(makeCall("s1", "echo", { text: "after" }));
  t.equal(echo.output, "after");
  t.equal(await counterValue(executor.metrics.calls, { tool: "sleep" }), 1, "the session got one result");
  t.equal(await counterValue(executor.metrics.duplicateCompletions), 0);
  t.equal(await counterValue(executor.metrics.droppedCompletions), 0);
});

t.test("a call whose runner dies on its last delivery: the session gets a max_deliveries error", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const config = poolConfig({ ackWaitMs: 1_000, maxDeliver: 1, concurrency: 2 });
  const a = await spawnRunner(t, server.url, config, "runner-a");
  const pending = executor.execute(makeCall("s1", "sleep", { ms: 5_000 }, 30_000));
  t.ok(await eventually(async () => (await a.metric("interlace_toolrunner_calls_in_flight")) === 1), "runner A is running the call");
  await a.kill("SIGKILL");
  // A live runner keeps pulling, which is when the server notices the exhausted message.
  const b = await startRunner(t, server.url, config, { runnerId: "runner-b" });
  const started = Date.now();
  const r = await pending;
  t.equal(r.ok, false);
  t.equal(r.error?.code, "max_deliveries");
  t.match(r.output, /failed on all 1 deliveries/);
  t.ok(Date.now() - started < 20_000, "well before the call's deadline");
  t.equal(await counterValue(b.metrics.calls), 0, "never run a second time");
});

t.test("nats-server restarted with calls in flight: nothing lost or duplicated", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const config = poolConfig({ ackWaitMs: 5_000, concurrency: 16, tools: IDEMPOTENT_SLEEP });
  const r1 = await startRunner(t, server.url, config, { runnerId: "r1" });
  const r2 = await startRunner(t, server.url, config, { runnerId: "r2" });

  const calls = Array.from({ length: 40 }, (_, i) => makeCall(`s${i % 8}`, "sleep", { ms: 300 + (i % 5) * 100, result: `r${i}` }, 60_000));
  const results = calls.map((c) => executor.execute(c));
  t.ok(await eventually(() => r1.metrics.inFlight.get().then((v) => v.values[0]!.value > 0)), "calls are running");
  await server.restart();
  // Calls sent right after the restart go through too.
  const after = Array.from({ length: 10 }, (_, i) => makeCall(`s${i}`, "echo", { text: `after ${i}` }, 60_000));
  const afterResults = after.map((c) => executor.execute(c));

  const done = await Promise.all(results);
  done.forEach((r, i) => {
    t.equal(r.ok, true, `call ${i} ok (${r.output})`);
    t.equal(r.output, `r${i}`);
  });
  (await Promise.all(afterResults)).forEach((r, i) => t.equal(r.output, `after ${i}`));
  t.equal(await counterValue(executor.metrics.duplicateCompletions), 0, "no duplicate completions");
  t.equal(await counterValue(executor.metrics.droppedCompletions), 0, "no dropped completions");
  const ran = (await counterValue(r1.metrics.calls)) + (await counterValue(r2.metrics.calls));
  t.ok(ran >= 50, `runners handled every call (${ran})`);
});

t.test("a runner stopped with SIGTERM finishes its in-flight call, then exits", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const a = await spawnRunner(t, server.url, poolConfig({ concurrency: 2 }), "runner-a");
  const probe = async (path: string): Promise<number> => (await fetch(`http://127.0.0.1:${a.port}${path}`)).status;
  t.equal(await probe("/healthz"), 200);
  t.equal(await probe("/readyz"), 200);
  const pending = executor.execute(makeCall("s1", "sleep", { ms: 1_500, result: "finished by a" }, 30_000));
  t.ok(await eventually(async () => (await a.metric("interlace_toolrunner_calls_in_flight")) === 1), "runner A is running the call");
  const exited = a.kill("SIGTERM");
  const r = await pending;
  t.equal(r.ok, true);
  t.equal(r.output, "finished by a", "completed by the runner that was stopping");
  await exited;
  t.equal(await a.exited, 0, "clean exit");
  // The runner removed its heartbeat: the pool has no runner now, so calls fail fast.
  const after = await executor.execute(makeCall("s1", "echo", { text: "x" }, 30_000));
  t.equal(after.error?.code, "no_runners");
});

t.test("a runner stopped with SIGTERM past its drain timeout hands its call back: another runner completes it once", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const config = poolConfig({ ackWaitMs: 30_000, maxDeliver: 3, concurrency: 2, tools: IDEMPOTENT_SLEEP });
  const a = await spawnRunner(t, server.url, config, "runner-a", { DRAIN_TIMEOUT_MS: "300" });
  // The call's deadline (15 s) comes before the ack wait (30 s): only a hand-back, not an ack timeout, gets it redelivered in time.
  const pending = executor.execute(makeCall("s1", "sleep", { ms: 4_000, result: "finished elsewhere" }, 15_000));
  t.ok(await eventually(async () => (await a.metric("interlace_toolrunner_calls_in_flight")) === 1), "runner A is running the call");
  await a.kill("SIGTERM");
  t.equal(await a.exited, 0, "runner A exited cleanly after its drain timeout");
  // Started only now, so nothing but A's hand-back can bring it the call (the ack wait, 30 s, is far off).
  const b = await startRunner(t, server.url, config, { runnerId: "runner-b" });
  const r = await pending;
  t.equal(r.ok, true, "the call completed");
  t.equal(r.output, "finished elsewhere");
  t.equal(await counterValue(b.metrics.redeliveries), 1, "runner B got it as a redelivery");
  const echo = await executor.execute(makeCall("s1", "echo", { text: "after" }));
  t.equal(echo.output, "after");
  t.equal(await counterValue(executor.metrics.calls, { tool: "sleep" }), 1, "the session got one result");
  t.equal(await counterValue(executor.metrics.duplicateCompletions), 0);
});
