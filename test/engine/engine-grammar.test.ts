/**
 * @module Constrained decoding inside call blocks, through the engine on real
 * llama.cpp: a model pushed to open call blocks (an extra logit on `[CALL]`)
 * writes well-formed calls of known tools with the grammar on, and malformed
 * ones with it off. The grammar is active only between `[CALL]` and `[END]`.
 */
import t from "tap";
import type { Token } from "node-llama-cpp";
import { CML, CML_MARKERS, type ToolSpec } from "../../common/src/index.js";
import { SPECIAL_TOKEN_IDS } from "../../engine-pod/src/model/index.js";
import { eventsOf, startEngine } from "./engine-fixture.js";

const callId = (SPECIAL_TOKEN_IDS.cmlFirst + CML_MARKERS.indexOf(CML.CALL)) as Token;
// Only an instant tool: a random model's arguments must not make the test wait.
const tools: ToolSpec[] = [
  {
    name: "echo",
    description: "returns its text",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    estimatedLatencyMs: 1,
  },
];

const { engine, executor } = await startEngine(t, { sequences: 2 }, { extraLogitBias: new Map([[callId, 8]]) });

t.test("grammar on: every call block the model writes is a valid call", async (t) => {
  const s = engine.createSession({ prompt: "call echo", tools, temperature: 0.7, seed: 3, maxTokens: 400 });
  await s.finished;
  const calls = eventsOf(s.events, "call");
  t.ok(calls.length >= 2, `${calls.length} calls written`);
  t.same(eventsOf(s.events, "call_error"), [], "no malformed or invalid call");
  t.ok(calls.every((c) => c.tool === "echo" && typeof c.arguments["text"] === "string"), "known tool, typed arguments");
  t.ok(executor.calls.length >= calls.length, "each went to the executor");
  t.ok(eventsOf(s.events, "interrupt").length >= 1, "results injected");
});

t.test("grammar off: the same model writes malformed calls (the grammar was doing the work)", async (t) => {
  const s = engine.createSession({ prompt: "call echo", tools, temperature: 0.7, seed: 3, maxTokens: 400, grammar: false });
  await s.finished;
  t.ok(eventsOf(s.events, "call_error").length >= 1, "call errors without the grammar");
});
