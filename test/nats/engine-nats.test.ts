/**
 * A real engine (llama.cpp on the generated `test` model) whose executor is
 * the NATS executor: tool calls leave the engine over JetStream, a tool
 * runner runs them, and their results come back as `[INTR]` blocks; a user
 * interrupt published on the session's interrupt subject (what `POST
 * /v1/sessions/{id}/interrupts` on another pod, or another agent, does) is
 * injected the same way. A tool in another namespace's pool (whose runner
 * would drop the call) is refused at once: the model reads why, the session
 * goes on.
 */
import t from "tap";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createLogger, type ToolSpec } from "../../common/src/index.js";
import { sendInterrupt } from "../../common/src/protocol/index.js";
import { createEngine, InterruptInbox } from "../../engine-pod/src/engine/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { POOL, poolConfig, startExecutor, startRunner } from "./fixtures.js";

const TOOLS: ToolSpec[] = [
  { name: "sleep", description: "waits ms", parameters: { type: "object", properties: { ms: { type: "integer" }, result: { type: "string" } }, required: ["ms"] }, pool: POOL },
  { name: "echo", description: "echoes", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }, pool: POOL },
];

t.test("an engine session whose tools run in a NATS tool pool", async (t) => {
  const server = await startNatsServer(t);
  await startRunner(t, server.url);
  // The engine's inbox exists before the engine: the executor is built with it, the engine opens it.
  const inbox = new InterruptInbox();
  const executor = await startExecutor(t, server.url, { enginePod: "engine-e2e", inbox });
  const modelPath = await ensureModel({ preset: "test" });
  const engine = await createEngine(
    { modelPath, gpu: false, sequences: 2, contextSize: 2048, threads: 1, kvPolicy: "auto", maxTokens: 256, prefixCache: true },
    executor,
    createLogger("engine-test", "warn"),
    { calibrate: false, inbox },
  );
  t.teardown(() => engine.close());

  const s = engine.createSession({
    prompt: "look something up, then do what the user adds",
    tools: TOOLS,
    policy: {
      type: "lpt-dag",
      calls: [
        { id: "first", tool: "sleep", arguments: { ms: 200, result: "found it" }, dependsOn: [] },
        { id: "later", tool: "echo", arguments: { text: "two" }, dependsOn: [], afterInterrupt: "user1" },
      ],
      finalText: " done",
    },
  });

  // Once the first result is in, a user interrupt arrives over NATS (as from another pod's HTTP API).
  const nc = await connect({ servers: server.url });
  t.teardown(() => nc.close());
  const js = jetstream(nc);
  s.subscribe((e) => {
    if (e.type === "interrupt" && e.id === "first") {
      void sendInterrupt(js, { engine: { namespace: "default", pod: "engine-e2e" }, sessionId: s.id, kind: "user", id: "user1", value: "also do two" });
    }
  });

  const done = await s.finished;
  t.equal(done.reason, "eos");
  const intr = s.events.filter((e) => e.type === "interrupt").map((e) => (e.type === "interrupt" ? { id: e.id, kind: e.kind, value: e.value } : null));
  t.same(intr, [
    { id: "first", kind: "tool_result", value: "found it" },
    { id: "user1", kind: "user", value: "also do two" },
    { id: "later", kind: "tool_result", value: "two" },
  ]);
  t.same(
    s.events.filter((e) => e.type === "call").map((e) => (e.type === "call" ? e.callId : "")),
    ["first", "later"],
  );
});

t.test("a session calling a tool of another namespace's pool reads why and goes on, not waiting out the call's deadline", async (t) => {
  // The BFCL bench's stall: runners in namespace bench, the engine in default; every call waited its 60 s deadline.
  const server = await startNatsServer(t);
  const theirs = { namespace: "bench", name: POOL.name };
  await startRunner(t, server.url, poolConfig({ namespace: theirs.namespace }));
  const inbox = new InterruptInbox();
  const executor = await startExecutor(t, server.url, { enginePod: "engine-foreign", inbox });
  const modelPath = await ensureModel({ preset: "test" });
  const engine = await createEngine(
    { modelPath, gpu: false, sequences: 1, contextSize: 2048, threads: 1, kvPolicy: "auto", maxTokens: 128, prefixCache: false },
    executor,
    createLogger("engine-test", "warn"),
    { calibrate: false, inbox },
  );
  t.teardown(() => engine.close());
  const s = engine.createSession({
    prompt: "echo something",
    tools: [{ ...TOOLS[1]!, pool: theirs }],
    policy: { type: "lpt-dag", calls: [{ id: "far", tool: "echo", arguments: { text: "hi" }, dependsOn: [] }], finalText: " done" },
  });
  const done = await s.finished;
  t.equal(done.reason, "eos");
  const results = s.events.flatMap((e) => (e.type === "interrupt" ? [{ id: e.id, kind: e.kind, value: e.value }] : []));
  t.equal(results.length, 1);
  t.match(results[0], { id: "far", kind: "tool_error", value: /unknown_tool.*names pool bench\/tools, but this engine pod is in namespace "default"/s });
});
