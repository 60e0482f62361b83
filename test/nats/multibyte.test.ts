/**
 * Multi-byte text over the wire, through a real nats-server: call arguments
 * in several scripts reach the runner intact and come back in the result
 * (executor → runner → result), the size cap cuts at a character boundary,
 * an error line carries the tool's multi-byte message, and a user interrupt
 * published with multi-byte text reaches the interrupt handler unchanged.
 */
import t from "tap";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { sendInterrupt } from "../../common/src/protocol/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { makeCall, poolConfig, startExecutor, startRunner } from "./fixtures.js";
import { SAMPLES } from "../engine/multibyte-fixture.js";


t.test("multi-byte text through executor → runner → result", async (t) => {
  const server = await startNatsServer(t);
  const received: { sessionId: string; value: string; id?: string }[] = [];
  const executor = await startExecutor(t, server.url, {
    inbox: {
      post: (sessionId, input) => {
        received.push({ sessionId, value: input.value, ...(input.id !== undefined ? { id: input.id } : {}) });
        return true;
      },
    },
  });
  await startRunner(t, server.url, poolConfig({ maxResultBytes: 64 }));

  await t.test("arguments and outputs round-trip in every script", async (t) => {
    const calls = SAMPLES.map((text, i) => makeCall(`세션-${i}`, "echo", { text }));
    const results = await Promise.all(calls.map((c) => executor.execute(c)));
    results.forEach((r, i) => {
      t.equal(r.ok, true, `${SAMPLES[i]}: ok`);
      t.equal(r.output, SAMPLES[i], `${SAMPLES[i]}: the runner echoed the exact text`);
    });
  });

  await t.test("the size cap never splits a character", async (t) => {
    const text = "한".repeat(30) + "👍".repeat(10); // 90 + 40 bytes
    const r = await executor.execute(makeCall("s", "echo", { text }));
    t.equal(r.ok, true);
    const kept = r.output.split("\n")[0]!;
    t.notMatch(kept, /\uFFFD/, "no replacement character");
    t.equal(kept, "한".repeat(21), "cut at the last whole character under 64 bytes");
    t.match(r.output, /\[truncated: 130 bytes, cap 64\]$/);
  });

  await t.test("an error line keeps the tool's multi-byte message", async (t) => {
    const r = await executor.execute(makeCall("s", "calculator", { expression: "일 + 이" }));
    t.equal(r.ok, false);
    t.match(r.output, /^error: tool_failed: calculator failed: /);
    t.notMatch(r.output, /\uFFFD/);
  });

  await t.test("a user interrupt with multi-byte text arrives unchanged", async (t) => {
    const nc = await connect({ servers: server.url });
    t.teardown(() => nc.close());
    for (const [i, value] of SAMPLES.entries()) {
      await sendInterrupt(jetstream(nc), { engine: { namespace: "default", pod: "engine-0" }, sessionId: `세션-${i}`, kind: "user", value, id: `u${i}` });
    }
    const deadline = Date.now() + 10_000;
    while (received.length < SAMPLES.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    t.same(
      received.sort((a, b) => (a.id ?? "").localeCompare(b.id ?? "")),
      SAMPLES.map((value, i) => ({ sessionId: `세션-${i}`, value, id: `u${i}` })),
    );
  });
});
