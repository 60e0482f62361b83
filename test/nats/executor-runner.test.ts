/**
 * Calls through a real nats-server: the NATS executor publishes, an
 * in-process tool runner runs builtin tools, results come back correlated to
 * their sessions; pools without runners fail fast, or with a hold wait for
 * one (a pool at zero being woken); deadlines become
 * `tool_timeout`; user/agent interrupts published on a session's interrupt
 * subject reach the interrupt handler; a call to another namespace's pool is
 * refused at once (its runner would drop it, and the call would wait out its
 * deadline); a runner that takes a call past its `startBy` (the engine's
 * hold for a runner ran out) answers `no_runners` and does not run it.
 */
import t from "tap";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { encodeCall, ensurePoolStream, interruptSubject, poolStream, PROTOCOL_VERSION, sendInterrupt, toolSubject, type CallMessage, type ResultMessage } from "../../common/src/protocol/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { eventually } from "../helpers/wait.js";
import { counterValue, makeCall, POOL, poolConfig, startExecutor, startRunner } from "./fixtures.js";

t.test("executor and runner over a real nats-server", async (t) => {
  const server = await startNatsServer(t);
  const received: { sessionId: string; kind: string; value: string; id?: string }[] = [];
  const executor = await startExecutor(t, server.url, {
    inbox: {
      post: (sessionId, input) => {
        if (sessionId === "gone") return false;
        received.push({ sessionId, ...input });
        return true;
      },
    },
  });

  await t.test("a pool with no runner fails fast with no_runners", async (t) => {
    const started = Date.now();
    const r = await executor.execute(makeCall("s0", "echo", { text: "hi" }, 30_000, { namespace: "default", name: "nobody" }));
    t.equal(r.ok, false);
    t.equal(r.error?.code, "no_runners");
    t.match(r.output, /no tool runner is serving pool default\/nobody/);
    t.ok(Date.now() - started < 5_000, "did not wait for the deadline");
  });

  await startRunner(t, server.url, poolConfig({ maxResultBytes: 100 }));

  await t.test("results are correlated to their calls and sessions", async (t) => {
    const calls = Array.from({ length: 20 }, (_, i) => makeCall(`s${i % 4}`, "echo", { text: `hello ${i}` }));
    const results = await Promise.all(calls.map((c) => executor.execute(c)));
    results.forEach((r, i) => {
      t.equal(r.ok, true, `call ${i} ok`);
      t.equal(r.callId, calls[i]!.id);
      t.equal(r.output, `hello ${i}`);
      t.type(r.runMs, "number");
    });
    t.equal(await counterValue(executor.metrics.calls, { outcome: "ok" }), 20);
  });

  await t.test("a deadline missed becomes a tool_timeout result", async (t) => {
    const r = await executor.execute(makeCall("s1", "sleep", { ms: 5_000 }, 300));
    t.equal(r.ok, false);
    t.equal(r.error?.code, "tool_timeout");
    t.match(r.output, /did not (complete|finish) within/);
  });

  await t.test("results over the size cap are truncated with a marker", async (t) => {
    const r = await executor.execute(makeCall("s1", "echo", { text: "x".repeat(500) }));
    t.equal(r.ok, true);
    t.match(r.output, /^x{100}\n\[truncated: 500 bytes, cap 100\]$/);
  });

  await t.test("an aborted call resolves as cancelled", async (t) => {
    const ac = new AbortController();
    const p = executor.execute(makeCall("s1", "sleep", { ms: 2_000 }), ac.signal);
    setTimeout(() => ac.abort(), 50);
    const r = await p;
    t.equal(r.error?.code, "cancelled");
  });

  await t.test("user and agent interrupts on the interrupt subject reach the handler", async (t) => {
    const nc = await connect({ servers: server.url });
    t.teardown(() => nc.close());
    const js = jetstream(nc);
    await sendInterrupt(js, { engine: { namespace: "default", pod: "engine-0" }, sessionId: "s7", kind: "user", value: "stop and summarize", id: "u1" });
    // Agent-to-agent: another engine's executor sends it.
    await executor.sendInterrupt("engine-0", "s7.with.dots", { kind: "agent", value: "from planner", from: "planner/s1" });
    await sendInterrupt(js, { engine: { namespace: "default", pod: "engine-0" }, sessionId: "gone", kind: "user", value: "late" });
    // Garbage on the subject is dropped and counted, not delivered.
    nc.publish(interruptSubject({ namespace: "default", pod: "engine-0" }, "s7"), "{not json");
    const until = Date.now() + 5_000;
    const settled = async (): Promise<boolean> =>
      received.length >= 2 &&
      (await counterValue(executor.metrics.droppedCompletions, { reason: "invalid" })) >= 1 &&
      (await counterValue(executor.metrics.droppedCompletions, { reason: "unknown_session" })) >= 1;
    while (!(await settled()) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    t.same(received, [
      { sessionId: "s7", kind: "user", value: "stop and summarize", id: "u1" },
      { sessionId: "s7.with.dots", kind: "agent", value: "from planner" },
    ]);
    t.equal(await counterValue(executor.metrics.droppedCompletions, { reason: "unknown_session" }), 1);
    t.equal(await counterValue(executor.metrics.droppedCompletions, { reason: "invalid" }), 1);
  });

  t.equal(await counterValue(executor.metrics.duplicateCompletions), 0, "no duplicate completions");
});

t.test("a second completion of a call is counted as a duplicate and never delivered; one without the call's token is dropped as forged", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url, { enginePod: "dup-pod" });
  // On this open test server anyone may read the call subject; the token is what a redelivered call's runner would echo.
  const nc = await connect({ servers: server.url });
  t.teardown(() => nc.close());
  const tokens: string[] = [];
  nc.subscribe("interlace.tools.default.tools.sleep", { callback: (_e, m) => void tokens.push(m.json<{ token: string }>().token) });
  await nc.flush();
  const runner = await startRunner(t, server.url);
  const call = makeCall("s1", "sleep", { ms: 800, result: "real" });
  const pending = executor.execute(call);
  const running = Date.now() + 10_000;
  while ((await runner.metrics.inFlight.get()).values[0]?.value !== 1 && Date.now() < running) await new Promise((r) => setTimeout(r, 10));
  const js = jetstream(nc);
  const stray = { v: PROTOCOL_VERSION, type: "result", callId: call.id, sessionId: "s1", tool: "sleep", ok: true, output: "first", runMs: 1, attempt: 1, runner: "other" };
  // Without the token: forged, dropped.
  await js.publish(interruptSubject({ namespace: "default", pod: "dup-pod" }, "s1"), JSON.stringify({ ...stray, output: "forged" }));
  // With it (as a redelivered call's runner would send), before the real one.
  t.equal(tokens.length, 1, "the call was seen once");
  await js.publish(interruptSubject({ namespace: "default", pod: "dup-pod" }, "s1"), JSON.stringify({ ...stray, token: tokens[0] }));
  const r = await pending;
  t.equal(r.output, "first", "the first completion with the token is delivered");
  t.equal(await counterValue(executor.metrics.droppedCompletions, { reason: "forged" }), 1, "the forged one was dropped and counted");
  // The runner's own completion arrives later and is dropped as a duplicate.
  const until = Date.now() + 10_000;
  while ((await counterValue(executor.metrics.duplicateCompletions)) < 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  t.equal(await counterValue(executor.metrics.duplicateCompletions), 1);
  t.equal(await counterValue(executor.metrics.calls), 1, "one completion delivered");
});

t.test("a pool with no live runner but a stream (at zero, being woken): the call is stored and held for a runner", async (t) => {
  const server = await startNatsServer(t);
  const nc = await connect({ servers: server.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const later = { namespace: "default", name: "later" };
  const never = { namespace: "default", name: "never" };
  // What the operator does for a pool with minReplicas 0: its stream exists before any runner.
  for (const pool of [later, never]) await ensurePoolStream(jsm, pool, { ackWaitMs: 30_000, maxDeliver: 3 });
  const executor = await startExecutor(t, server.url, { runnerHoldMs: 60_000 });

  const answer = executor.execute(makeCall("s-wake", "echo", { text: "after the cold start" }, 60_000, later));
  const stored = await eventually(async () => (await jsm.streams.info(poolStream(later))).state.messages === 1, 5_000);
  t.ok(stored, "the call is on the pool's stream (the backlog the autoscaler wakes the pool on)");
  t.equal(executor.inFlight, 1, "and waits, not failed");
  await startRunner(t, server.url, poolConfig({ pool: later.name }));
  const r = await answer;
  t.equal(r.ok, true, "a runner that comes up takes it");
  t.equal(r.output, "after the cold start");
  t.equal(await counterValue(executor.metrics.runnerHolds, { outcome: "runner" }), 1);

  const short = await startExecutor(t, server.url, { runnerHoldMs: 500, enginePod: "engine-1" });
  const started = Date.now();
  const none = await short.execute(makeCall("s-none", "echo", { text: "x" }, 60_000, never));
  t.equal(none.error?.code, "no_runners", "no runner within the hold");
  t.match(none.output, /no tool runner came up for pool default\/never within 500 ms .*tool "echo" was not run/, "naming the hold and the pool");
  t.ok(Date.now() - started < 10_000, "at the hold, not the deadline");
  t.equal(await counterValue(short.metrics.runnerHolds, { outcome: "timeout" }), 1);

  const noStream = await short.execute(makeCall("s-gone", "echo", { text: "x" }, 60_000, { namespace: "default", name: "nowhere" }));
  t.match(noStream.output, /no tool runner is serving pool default\/nowhere .*the call was not sent/, "a pool with no stream at all still fails at once");
});

t.test("a call whose runner hold ran out is never run by a runner that comes up later", async (t) => {
  const server = await startNatsServer(t);
  const nc = await connect({ servers: server.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const late = { namespace: "default", name: "late" };
  const orphan = { namespace: "default", name: "orphan" };
  for (const pool of [late, orphan]) await ensurePoolStream(jsm, pool, { ackWaitMs: 30_000, maxDeliver: 3 });

  await t.test("a runner that comes up after the hold answers the call no_runners and does not run it", async (t) => {
    const executor = await startExecutor(t, server.url, { runnerHoldMs: 300, enginePod: "engine-late" });
    const held = await executor.execute(makeCall("s-late", "echo", { text: "must not run" }, 60_000, late));
    t.equal(held.error?.code, "no_runners", "the model was told no runner came");
    t.equal((await jsm.streams.info(poolStream(late))).state.messages, 1, "the call is still stored (the engine may not delete it)");

    const runner = await startRunner(t, server.url, poolConfig({ pool: late.name }));
    t.ok(await eventually(async () => (await counterValue(executor.metrics.droppedCompletions, { reason: "late" })) === 1, 10_000), "its answer reached the engine, which dropped it as late");
    t.equal(await counterValue(runner.metrics.calls, { outcome: "no_runners" }), 1, "answered no_runners");
    t.equal(await counterValue(runner.metrics.expired), 1, "counted as expired");
    t.equal((await runner.metrics.duration.get()).values.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0, 0, "the tool did not run");
    t.ok(await eventually(async () => (await jsm.streams.info(poolStream(late))).state.messages === 0, 5_000), "and the call was acked away");

    // Calls sent now that a runner is up run as usual.
    const after = await executor.execute(makeCall("s-late", "echo", { text: "runs" }, 20_000, late));
    t.equal(after.output, "runs");
  });

  await t.test("a runner answers no_runners, without running it, a call whose engine is gone", async (t) => {
    // What an engine that died during its hold leaves behind: a stored call past its startBy, nobody to tell.
    const replyTo = interruptSubject({ namespace: "default", pod: "engine-gone" }, "s-orphan");
    const answers: ResultMessage[] = [];
    nc.subscribe(replyTo, { callback: (_e, m) => void answers.push(m.json<ResultMessage>()) });
    await nc.flush();
    const now = Date.now();
    const call: CallMessage = { v: PROTOCOL_VERSION, callId: "c-orphan", sessionId: "s-orphan", tool: "echo", arguments: { text: "must not run" }, deadline: now + 60_000, replyTo, publishedAt: now - 2_000, startBy: now - 1_000, token: "t-orphan" };
    const message = encodeCall(call, "engine-gone:s-orphan:c-orphan");
    await js.publish(toolSubject(orphan, "echo"), message.data, { headers: message.headers, msgID: message.msgID! });

    const runner = await startRunner(t, server.url, poolConfig({ pool: orphan.name }));
    t.ok(await eventually(async () => answers.length === 1, 10_000), "the runner answered the call");
    t.match(answers[0], { callId: "c-orphan", ok: false, error: { code: "no_runners" }, token: "t-orphan" }, "no_runners, to the call's reply subject, with its token");
    t.match(answers[0]?.output, /echo reached a runner \d+ ms after the engine stopped holding it for one; it was not run/);
    t.equal(await counterValue(runner.metrics.expired, { tool: "echo" }), 1, "counted as expired");
    t.equal((await runner.metrics.duration.get()).values.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0, 0, "the tool did not run");
    t.ok(await eventually(async () => (await jsm.streams.info(poolStream(orphan))).state.messages === 0, 5_000), "and the call was acked away");
  });
});

t.test("a call to another namespace's pool is refused at once, not left to wait out its deadline", async (t) => {
  // What the BFCL bench did: its runners served pool bench/…, its engine ran in namespace default.
  // The runner ran the tool, then dropped the result (its reply subject was another tenant's), and
  // each call waited its whole deadline for a tool_timeout.
  const server = await startNatsServer(t);
  const theirs = { namespace: "bench", name: POOL.name };
  const runner = await startRunner(t, server.url, poolConfig({ namespace: theirs.namespace }));
  const foreign = await startExecutor(t, server.url, { enginePod: "engine-default" });
  const r = await foreign.execute(makeCall("s1", "echo", { text: "hi" }, 20_000, theirs));
  t.equal(r.ok, false);
  t.equal(r.error?.code, "unknown_tool");
  t.match(r.output, /names pool bench\/tools, but this engine pod is in namespace "default"/);
  t.equal(await counterValue(runner.metrics.calls), 0, "nothing was sent to the runner");

  // The same pool from an engine of its own namespace answers.
  const own = await startExecutor(t, server.url, { namespace: theirs.namespace, enginePod: "engine-bench" });
  const ok = await own.execute(makeCall("s2", "echo", { text: "hi" }, 20_000, theirs));
  t.equal(ok.ok, true, ok.output);
  t.equal(ok.output, "hi");
});
