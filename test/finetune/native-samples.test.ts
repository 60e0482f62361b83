/**
 * @module Training samples in the model's own tool-call format (the accuracy
 * bench's `native` row): the functions are documented and constrained the
 * way node-llama-cpp's grammar writes calls (every parameter, in schema
 * order, null for one left out, dropped again before scoring); a sample is
 * the chat wrapper's own rendering of the conversation, and its loss covers
 * exactly what the model writes (each call, the answer, the end of turn) and
 * none of the runtime's function results.
 */
import t from "tap";
import { existsSync } from "node:fs";
import { resolveChatWrapper, ChatMLChatWrapper, type Token } from "node-llama-cpp";
import type { ToolSpec } from "../../common/src/index.js";
import { mulberry32 } from "../../bench/bfcl/seeded-random.js";
import { defaultBfclDir } from "../../bench/bfcl/load-tasks.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import type { TrainingTask } from "../../finetune/src/build-samples.js";
import { bfclSources, buildNativeDataset } from "../../finetune/src/dataset.js";
import { fromNativeParams, nativeFunctions, nativeParamsSchema, toNativeParams } from "../../bench/accuracy/native-functions.js";
import { NativeSampleTokenizer } from "../../finetune/src/native-samples.js";
import { SampleTokenizer } from "../../finetune/src/sample-tokens.js";

const weather: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city.",
  parameters: {
    type: "object",
    properties: { unit: { type: "string", enum: ["c", "f"], description: "Unit." }, city: { type: "string" } },
    required: ["city"],
  },
};

t.test("native functions: optional parameters nullable, calls in schema order, nulls dropped again", async (t) => {
  const schema = nativeParamsSchema(weather.parameters);
  t.same(schema.properties!["city"], { type: "string" }, "a required parameter is unchanged");
  t.same(schema.properties!["unit"], { oneOf: [{ type: "string", enum: ["c", "f"], description: "Unit." }, { type: "null" }], description: "Unit." }, "an optional one may be null");
  t.same(nativeFunctions([weather])["get_weather"]!.params, schema, "the documented functions carry that schema");
  const native = toNativeParams(weather, { city: "Boston" });
  t.same(Object.keys(native), ["unit", "city"], "every parameter, in the schema's order (the grammar's order)");
  t.equal(native["unit"], null, "the omitted one is null");
  t.same(fromNativeParams(native), { city: "Boston" }, "and is dropped again before scoring");
  t.same(fromNativeParams("not an object"), {}, "a malformed call has no arguments");
});

t.test("a native sample is the wrapper's rendering, its loss on the model's calls, answer and end of turn only", async (t) => {
  const tokenizer = await SampleTokenizer.load(await ensureModel({ preset: "test" }));
  t.teardown(() => tokenizer.close());
  const native = new NativeSampleTokenizer(tokenizer.model);
  const task: TrainingTask = {
    id: "t0",
    origin: "hand",
    sources: ["hand"],
    messages: [{ role: "user", content: "Weather in Boston and in Oslo?" }],
    tools: [weather],
    calls: [
      { id: "a", tool: "get_weather", arguments: { city: "Boston" }, dependsOn: [] },
      { id: "b", tool: "get_weather", arguments: { city: "Oslo", unit: "c" }, dependsOn: [] },
    ],
  };
  const sample = native.sample(task, mulberry32(3));
  if (sample === undefined) return t.fail("the sample renders with exact loss spans");
  const wrapper = resolveChatWrapper(tokenizer.model, { warningLogs: false }) ?? new ChatMLChatWrapper();
  const { contextText } = wrapper.generateContextState({
    chatHistory: [{ type: "user", text: task.messages[0]!.content }, { type: "model", response: [...sample.calls.map((c) => ({ type: "functionCall" as const, ...c })), sample.answer] }],
    availableFunctions: nativeFunctions(task.tools),
    documentFunctionParams: true,
  });
  const ids = sample.tokens.input_ids as Token[];
  t.same(ids.slice(0, -1), contextText.tokenize(tokenizer.model.tokenizer), "the tokens are the chat wrapper's rendering, then the end of turn");
  t.same(sample.calls.map((c) => c.params), [{ unit: null, city: "Boston" }, { unit: "c", city: "Oslo" }], "calls as the grammar writes them");
  const spans = sample.tokens.loss_spans;
  t.ok(spans.every(([a, b]) => a >= sample.tokens.prompt_tokens && b > a), "nothing of the prompt is in the loss");
  t.equal(spans[spans.length - 1]![1], ids.length, "the end of turn is in the loss");
  const inLoss = spans.map(([a, b]) => tokenizer.model.detokenize(ids.slice(a, b))).join("\u0000");
  const outOfLoss = tokenizer.model.detokenize(ids.slice(sample.tokens.prompt_tokens).filter((_, i) => !spans.some(([a, b]) => i + sample.tokens.prompt_tokens >= a && i + sample.tokens.prompt_tokens < b)));
  for (const city of ["Boston", "Oslo"]) t.match(inLoss, city, `the model writes the call for ${city}, arguments included`);
  t.match(inLoss, sample.answer, "and the answer");
  for (const c of sample.calls) {
    const result = JSON.stringify(c.result).slice(2, 14);
    t.notMatch(inLoss, result, "no function result is in the loss");
    t.ok(outOfLoss.replace(/\s/g, "").includes(JSON.stringify(c.result).replace(/\s/g, "").slice(1, -1)), "the result is in the context, outside the loss");
  }
});

const bfclDir = defaultBfclDir();
t.test("the native dataset is the same tuning tasks as the CML one", { skip: existsSync(bfclDir) ? false : `BFCL data not found at ${bfclDir}` }, async (t) => {
  const tokenizer = await SampleTokenizer.load(await ensureModel({ preset: "test" }));
  t.teardown(() => tokenizer.close());
  const sources = bfclSources(bfclDir).filter((s) => /simple_python/.test(s.questions));
  const { samples, stats } = buildNativeDataset({ sources, split: "tuning", seed: 1, variants: 1, multiCallVariants: 1, fanOuts: 1, runs: 1, syncShare: 0.25, multistep: 0, synthetic: 0, callStyle: "json", instructions: "brief", maxTokens: 100_000 }, tokenizer);
  t.ok(samples.length > 0 && stats.samples === samples.length, `${samples.length} samples`);
  t.notOk(stats.byShape["left out: no exact loss spans"], "every task renders with exact loss spans");
  t.ok(samples.every((s) => s.meta["format"] === "native" && s.calls.length > 0), "every sample is native and calls");
  t.ok(samples.every((s) => s.tokens.loss_spans.at(-1)![1] === s.tokens.input_ids.length && s.tokens.loss_spans.every(([a]) => a >= s.tokens.prompt_tokens)), "every loss ends with the turn and starts after the prompt");
});
