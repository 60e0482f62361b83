/**
 * Effects at most once and faults survived, against real nats-servers:
 * - a runner SIGKILLed mid-call (start recorded, no result): a non-idempotent
 *   tool is answered `outcome_unknown`, never run twice;
 * - a runner SIGKILLed between publishing its result and acking: the
 *   redelivered call is answered from the effect log, not rerun;
 * - a SIGKILLed runner stops counting as live within 4 s and new calls go to
 *   the live runner at once;
 * - nats-server SIGKILLed with 40 calls in flight and restarted: 0 lost, 0
 *   duplicated;
 * - one node of a three-node JetStream cluster SIGKILLed with calls in
 *   flight (streams and buckets at R3, clients given every node): routing
 *   continues, 0 lost, 0 duplicated.
 */
import t from "tap";
import { jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer } from "../helpers/nats-server.js";
import { NatsCluster } from "../../hack/nats.js";
import { BUILTIN_TOOLS, counterValue, makeCall, poolConfig, spawnRunner, startExecutor, startRunner } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

const IDEMPOTENT_SLEEP = BUILTIN_TOOLS.map((tool) => (tool.name === "sleep" ? { ...tool, idempotent: true } : tool));

t.test("a non-idempotent call whose runner died after starting it is answered outcome_unknown, not run again", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const config = poolConfig({ ackWaitMs: 1_500, maxDeliver: 3, concurrency: 2 });
  const a = await spawnRunner(t, server.url, config, "runner-a");
  const pending = executor.execute(makeCall("s1", "sleep", { ms: 3_000, result: "done" }, 30_000));
  t.ok(await eventually(async () => (await a.metric("interlace_toolrunner_calls_in_flight")) === 1), "runner A is running the call");
  await a.kill("SIGKILL");
  const b = await startRunner(t, server.url, config, { runnerId: "runner-b" });
  const r = await pending;
  t.equal(r.ok, false);
  t.equal(r.error?.code, "outcome_unknown");
  t.match(r.output, /runner-a .*not idempotent, so it was not run again/);
  t.equal(await counterValue(b.metrics.effects, { outcome: "outcome_unknown" }), 1);
  const { values } = await b.metrics.duration.get();
  t.equal(values.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0, 0, "runner B never ran the tool");
});

t.test("a runner killed between publishing its result and acking: the redelivered call is answered from the effect log, not rerun", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const config = poolConfig({ ackWaitMs: 1_500, maxDeliver: 3, concurrency: 2, tools: IDEMPOTENT_SLEEP });
  const a = await spawnRunner(t, server.url, config, "runner-a", { INTERLACE_FAULT: "exit-before-ack" });
  const r = await executor.execute(makeCall("s1", "sleep", { ms: 200, result: "once" }, 30_000));
  t.equal(r.output, "once", "the session got the result runner A published");
  await a.exited;
  const b = await startRunner(t, server.url, config, { runnerId: "runner-b" });
  t.ok(await eventually(async () => (await counterValue(b.metrics.effects, { outcome: "replayed" })) === 1, 15_000), "runner B answered the redelivery from the record");
  const { values } = await b.metrics.duration.get();
  t.equal(values.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0, 0, "and never ran the tool");
  await new Promise((r) => setTimeout(r, 300));
  t.equal(await counterValue(executor.metrics.calls), 1, "one completion delivered");
  t.equal(await counterValue(executor.metrics.duplicateCompletions), 0, "the republished result was de-duplicated by JetStream");
});

t.test("a SIGKILLed runner stops counting as live within 4 s; new calls fail over at once", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const config = poolConfig({ concurrency: 4 });
  const a = await spawnRunner(t, server.url, config, "runner-a");
  await startRunner(t, server.url, config, { runnerId: "runner-b" });
  await a.kill("SIGKILL");
  const killed = Date.now();
  const r = await executor.execute(makeCall("s1", "echo", { text: "after the kill" }, 30_000));
  t.equal(r.output, "after the kill", "served by the live runner");
  t.ok(Date.now() - killed < 3_000, `new call completed ${Date.now() - killed} ms after the kill`);
  // With only the dead runner left, the pool is empty within the stated 4 s (+ watch latency).
  const solo = await startNatsServer(t);
  const soloExecutor = await startExecutor(t, solo.url);
  const c = await spawnRunner(t, solo.url, config, "runner-c");
  t.equal((await soloExecutor.execute(makeCall("s1", "echo", { text: "x" }))).output, "x");
  await c.kill("SIGKILL");
  const down = Date.now();
  t.ok(
    await eventually(async () => (await soloExecutor.execute(makeCall("s1", "echo", { text: "x" }, 500))).error?.code === "no_runners", 8_000),
    "calls fail fast with no_runners",
  );
  t.ok(Date.now() - down <= 6_000, `dead runner dropped after ${Date.now() - down} ms`);
});

t.test("nats-server SIGKILLed with 40 calls in flight and restarted: 0 lost, 0 duplicated", async (t) => {
  const server = await startNatsServer(t);
  const executor = await startExecutor(t, server.url);
  const config = poolConfig({ ackWaitMs: 5_000, concurrency: 16, tools: IDEMPOTENT_SLEEP });
  const r1 = await startRunner(t, server.url, config, { runnerId: "r1" });
  const r2 = await startRunner(t, server.url, config, { runnerId: "r2" });
  const calls = Array.from({ length: 40 }, (_, i) => makeCall(`s${i % 8}`, "sleep", { ms: 300 + (i % 5) * 100, result: `r${i}` }, 90_000));
  const results = calls.map((c) => executor.execute(c));
  t.ok(await eventually(() => r1.metrics.inFlight.get().then((v) => v.values[0]!.value > 0)), "calls are running");
  await server.restart(500, "SIGKILL");
  const done = await Promise.all(results);
  const lost = done.filter((r, i) => r.output !== `r${i}`);
  t.same(lost.map((r) => r.output), [], "every call got its own result");
  t.equal(await counterValue(executor.metrics.calls), 40, "40 completions, one per call");
  t.equal(await counterValue(executor.metrics.duplicateCompletions), 0, "no duplicate completions");
  t.equal(await counterValue(executor.metrics.droppedCompletions), 0, "no dropped completions");
  t.ok((await counterValue(r1.metrics.calls)) + (await counterValue(r2.metrics.calls)) >= 40);
});

t.test("one node of a three-node JetStream cluster SIGKILLed with calls in flight: routing continues, 0 lost, 0 duplicated", async (t) => {
  const saved = process.env["INTERLACE_NATS_REPLICAS"];
  process.env["INTERLACE_NATS_REPLICAS"] = "3";
  t.teardown(() => {
    if (saved === undefined) delete process.env["INTERLACE_NATS_REPLICAS"];
    else process.env["INTERLACE_NATS_REPLICAS"] = saved;
  });
  const cluster = await NatsCluster.start();
  t.teardown(() => cluster.stop());
  // Each party is given every seed; they connect to different nodes.
  const executor = await startExecutor(t, cluster.urls);
  // While the cluster elects new stream and bucket leaders, acks and effect records can stall for a few
  // seconds; enough deliveries that an election never turns a call into max_deliveries (not what this tests).
  const config = poolConfig({ ackWaitMs: 5_000, maxDeliver: 10, concurrency: 16, tools: IDEMPOTENT_SLEEP });
  await startRunner(t, [...cluster.urls].reverse(), config, { runnerId: "r1" });
  await startRunner(t, cluster.urls, config, { runnerId: "r2" });
  const jsm = await jetstreamManager(executor.nc);
  for (const stream of ["INTERLACE_INTR_default", "INTERLACE_TOOLS_default_tools", "KV_interlace-effects", "KV_interlace-runners"]) {
    t.equal((await jsm.streams.info(stream)).config.num_replicas, 3, `${stream} has three replicas`);
  }
  const calls = Array.from({ length: 40 }, (_, i) => makeCall(`s${i % 8}`, "sleep", { ms: 200 + (i % 5) * 100, result: `r${i}` }, 90_000));
  const results = calls.map((c) => executor.execute(c));
  await new Promise((r) => setTimeout(r, 150));
  await cluster.nodes[0]!.halt("SIGKILL");
  const killedAt = Date.now();
  const after = Array.from({ length: 20 }, (_, i) => makeCall(`s${i}`, "echo", { text: `after ${i}` }, 90_000));
  const afterResults = after.map((c) => executor.execute(c));
  const done = await Promise.all(results);
  t.same(done.map((r, i) => (r.output === `r${i}` ? null : r.output)).filter((x) => x !== null), [], "every call before the kill got its own result");
  t.same((await Promise.all(afterResults)).map((r) => r.output), after.map((_, i) => `after ${i}`), "calls after the kill are routed too");
  t.comment(`every result in ${Date.now() - killedAt} ms after the kill`);
  t.equal(await counterValue(executor.metrics.calls), 60, "60 completions, one per call");
  t.equal(await counterValue(executor.metrics.duplicateCompletions), 0, "no duplicates");
  t.equal(await counterValue(executor.metrics.droppedCompletions), 0, "no drops");
});
