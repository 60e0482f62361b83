/**
 * Fuzzed NATS messages (fast-check) against a real nats-server, engine
 * executor and tool runner: arbitrary bodies on a session's interrupt subject
 * are each dropped and counted (or, when they happen to be valid, handled as
 * results/interrupts for no pending call); arbitrary bodies on a pool's call
 * subject are answered or terminated by the runner, which keeps serving.
 */
import t from "tap";
import fc from "fast-check";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { interruptSubject, toolSubject } from "../../common/src/protocol/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { counterValue, makeCall, POOL, startExecutor, startRunner } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

const RUNS = Number(process.env["FUZZ_RUNS"] ?? 300);
const body = fc.oneof(
  fc.uint8Array({ maxLength: 1_000 }),
  fc.json().map((j) => new TextEncoder().encode(j)),
  fc.record({ v: fc.constant(1), type: fc.constantFrom("result", "interrupt"), sessionId: fc.constant("s1"), callId: fc.string(), kind: fc.constantFrom("user", "agent"), value: fc.string(), ok: fc.boolean(), output: fc.string(), tool: fc.string(), runMs: fc.nat(), attempt: fc.nat(), runner: fc.string() }, { requiredKeys: ["v", "type", "sessionId"] }).map((v) => new TextEncoder().encode(JSON.stringify(v))),
);

t.test("arbitrary messages on interrupt and call subjects: counted drops, nothing crashes", async (t) => {
  const server = await startNatsServer(t);
  let delivered = 0;
  const executor = await startExecutor(t, server.url, { inbox: { post: () => (delivered++, false) } });
  const runner = await startRunner(t, server.url);
  const nc = await connect({ servers: server.url });
  t.teardown(() => nc.close());
  const js = jetstream(nc);

  const intr = fc.sample(body, RUNS);
  for (const b of intr) await js.publish(interruptSubject({ namespace: "default", pod: "engine-0" }, "s1"), b);
  const handled = async (): Promise<number> => (await counterValue(executor.metrics.droppedCompletions)) + (await counterValue(executor.metrics.duplicateCompletions));
  t.ok(await eventually(async () => (await handled()) >= RUNS, 20_000), `every interrupt-subject message was handled (${await handled()} of ${RUNS})`);
  t.equal(await handled(), RUNS, "each one counted exactly once as a drop (with a reason label)");
  t.comment(`fuzzed interrupt-subject messages: ${RUNS}, 0 crashes, ${delivered} valid interrupts for an unknown session`);

  const calls = fc.sample(body, RUNS);
  for (const b of calls) await js.publish(toolSubject(POOL, "echo"), b);
  t.ok(await eventually(async () => (await counterValue(runner.metrics.malformed)) >= RUNS, 30_000), "the runner read every call-subject message as malformed");
  t.comment(`fuzzed call-subject messages: ${RUNS}, 0 crashes`);
  const r = await executor.execute(makeCall("s2", "echo", { text: "still serving" }));
  t.equal(r.output, "still serving", "engine and runner still serve real calls");
});
