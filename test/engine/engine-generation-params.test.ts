/**
 * @module The OpenAI generation parameters on the engine (real llama.cpp, the
 * generated `test` model, whose random weights never open a call block or
 * write JSON of their own): `toolChoice` forces the first call block and, by
 * name, its tool; `maxCalls` ends the turn at its first call; an answer
 * format makes the answer a JSON value of the schema; `stop` ends the text
 * before its sequence, streamed or not; `topP` and the penalties change what
 * is sampled.
 */
import t from "tap";
import type { Token } from "node-llama-cpp";
import { CML, CML_MARKERS, type JsonSchema, type ToolSpec } from "../../common/src/index.js";
import { compileSchema } from "../../common/src/wire/validator.js";
import { SPECIAL_TOKEN_IDS } from "../../engine-pod/src/model/index.js";
import { startEngine, TOOLS } from "./engine-fixture.js";

const callToken = (SPECIAL_TOKEN_IDS.cmlFirst + CML_MARKERS.indexOf(CML.CALL)) as Token;
const { engine } = await startEngine(t, { sequences: 2 });
// A model that likes to open call blocks (as the grammar test's): several calls a turn.
const { engine: caller } = await startEngine(t, { sequences: 1 }, { extraLogitBias: new Map([[callToken, 8]]) });
// One that never opens one, to see the answer grammar's JSON where calls are allowed too.
const { engine: answerer } = await startEngine(t, { sequences: 1 }, { extraLogitBias: new Map([[callToken, -40]]) });

const tools: ToolSpec[] = [
  { name: "echo", description: "returns its text", parameters: { type: "object", properties: { text: { type: "string", maxLength: 8 } }, required: ["text"] } },
  { name: "add", description: "adds two integers", parameters: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"] } },
];
const ask = (content: string) => [{ role: "user" as const, content }];

t.test("toolChoice required: the turn is a call, where the model alone writes none", async (t) => {
  const base = { messages: ask("hello"), tools, temperature: 0.7, seed: 5, maxTokens: 120 };
  const free = await engine.complete(base);
  t.equal(free.toolCalls.length, 0, "left alone, this model calls nothing");
  const forced = await engine.complete({ ...base, toolChoice: "required" });
  t.ok(forced.toolCalls.length >= 1, `${forced.toolCalls.length} call(s)`);
  t.equal(forced.finishReason, "tool_calls");
  t.ok(forced.raw.startsWith(CML.CALL), "the call block opens the turn");
});

t.test("toolChoice by name: every call of the completion is of that tool", async (t) => {
  for (const seed of [1, 2, 3]) {
    const r = await caller.complete({ messages: ask("hello"), tools, temperature: 0.9, seed, maxTokens: 160, toolChoice: { name: "add" } });
    t.ok(r.toolCalls.length >= 1, `seed ${seed}: ${r.toolCalls.length} call(s)`);
    t.ok(r.toolCalls.every((c) => c.name === "add" && Number.isInteger(c.arguments["a"])), `seed ${seed}: ${r.toolCalls.map((c) => c.name).join(",")}`);
  }
});

t.test("toolChoice is refused where it cannot apply", async (t) => {
  await t.rejects(engine.complete({ messages: ask("x"), tools: [], toolChoice: "required" }), /no tools/);
  await t.rejects(engine.complete({ messages: ask("x"), tools, toolChoice: { name: "nope" } }), /not one of/);
  await t.rejects(engine.complete({ messages: ask("x"), tools, toolChoice: "required", policy: { type: "text", pieces: ["hi"] } }), /scripted/);
});

t.test("maxCalls 1 (parallel_tool_calls: false): the turn ends at its first call", async (t) => {
  const unbounded: number[] = [];
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const base = { messages: ask("hello"), tools, temperature: 0.9, seed, maxTokens: 240, toolChoice: "required" as const };
    unbounded.push((await caller.complete(base)).toolCalls.length);
    const one = await caller.complete({ ...base, maxCalls: 1 });
    t.equal(one.toolCalls.length, 1, `seed ${seed}: one call`);
    t.equal(one.finishReason, "tool_calls");
  }
  t.ok(Math.max(...unbounded) >= 2, `unbounded, the same seeds write ${unbounded.join(", ")} calls`);
});

const FORECAST: JsonSchema = {
  type: "object",
  properties: {
    city: { type: "string", maxLength: 12 },
    days: {
      type: "array",
      maxItems: 3,
      items: { type: "object", properties: { day: { enum: ["mon", "tue", "wed"] }, high: { type: "integer" }, rain: { type: "boolean" } }, required: ["day", "high"] },
    },
    note: { anyOf: [{ type: "string", maxLength: 6 }, { type: "null" }] },
  },
  required: ["city", "days", "note"],
};
const validForecast = compileSchema<unknown>(FORECAST, "answer");

t.test("an answer format: the answer is a JSON value of the nested schema, every seed", async (t) => {
  for (const seed of [1, 2, 3, 4]) {
    const r = await engine.complete({ messages: ask("the forecast"), tools: [], temperature: 1, seed, maxTokens: 300, answerFormat: { type: "json_schema", schema: FORECAST } });
    t.equal(r.finishReason, "stop", `seed ${seed} ended on its own`);
    let parsed: unknown;
    t.doesNotThrow(() => (parsed = JSON.parse(r.content)), `seed ${seed}: JSON ${r.content}`);
    const checked = validForecast(parsed);
    t.ok(checked.ok, checked.ok ? `seed ${seed} validates` : checked.error);
  }
  const free = await engine.complete({ messages: ask("the forecast"), tools: [], temperature: 1, seed: 1, maxTokens: 60 });
  t.throws(() => JSON.parse(free.content), "without it the same model writes no JSON");
});

t.test("an answer format with tools: the model may still call (the grammar admits the opening), or answer in JSON", async (t) => {
  const called = await caller.complete({ messages: ask("x"), tools, temperature: 0.9, seed: 3, maxTokens: 200, answerFormat: { type: "json_object" } });
  t.ok(called.toolCalls.length >= 1, "a model that calls still calls");
  t.equal(called.content.trim(), "", "and writes no answer beside its calls");
  for (const seed of [1, 2]) {
    const answered = await answerer.complete({ messages: ask("x"), tools, temperature: 1, seed, maxTokens: 300, answerFormat: { type: "json_schema", schema: FORECAST } });
    t.equal(answered.toolCalls.length, 0);
    t.equal(answered.finishReason, "stop");
    const checked = validForecast(JSON.parse(answered.content));
    t.ok(checked.ok, checked.ok ? answered.content : checked.error);
  }
});

t.test("an answer format is the model's own: not with a scripted policy", async (t) => {
  await t.rejects(engine.complete({ messages: ask("x"), tools: [], policy: { type: "text", pieces: ["{}"] }, answerFormat: { type: "json_object" } }), /scripted/);
});

t.test("stop: the text ends before the first stop sequence, streamed or not, and nothing of it leaks", async (t) => {
  const base = { messages: ask("tell me more"), tools: [], maxTokens: 40 };
  const full = await engine.complete(base);
  t.ok(full.content.length > 20, full.content);
  const stop = full.content.slice(12, 15);
  const at = full.content.indexOf(stop);
  const streamed: string[] = [];
  const cut = await engine.complete({ ...base, stop: [stop, "\u0000never"], onText: (x) => streamed.push(x) });
  t.equal(cut.content, full.content.slice(0, at));
  t.equal(streamed.join(""), cut.content, "the stream carried exactly the content");
  t.equal(cut.finishReason, "stop");
  t.ok(cut.usage.completionTokens < full.usage.completionTokens, "generation stopped there");
  const none = await engine.complete({ ...base, stop: ["\u0000never"] });
  t.equal(none.content, full.content, "a stop that never matches holds nothing back");
});

t.test("topP: a tiny nucleus samples the greedy token whatever the seed", async (t) => {
  const base = { messages: ask("something random"), tools: [], maxTokens: 24, temperature: 1.5 };
  const greedy = await engine.complete({ ...base, temperature: 0 });
  const a = await engine.complete({ ...base, seed: 1 });
  const b = await engine.complete({ ...base, seed: 2 });
  t.not(a.content, b.content, "at top_p 1 two seeds differ");
  const na = await engine.complete({ ...base, seed: 1, topP: 1e-6 });
  const nb = await engine.complete({ ...base, seed: 2, topP: 1e-6 });
  t.equal(na.content, greedy.content);
  t.equal(nb.content, greedy.content);
});

t.test("penalties: a presence penalty makes greedy decoding repeat fewer tokens", async (t) => {
  const base = { messages: ask("repeat"), tools: [], maxTokens: 48 };
  const tokensOf = (text: string): number => new Set(text).size;
  const plain = await engine.complete(base);
  const penalised = await engine.complete({ ...base, presencePenalty: 2, frequencyPenalty: 2 });
  t.not(penalised.content, plain.content, "the penalties change the greedy output");
  t.ok(tokensOf(penalised.content) >= tokensOf(plain.content), `distinct characters ${tokensOf(penalised.content)} vs ${tokensOf(plain.content)}`);
  await t.rejects(engine.complete({ ...base, presencePenalty: 3 }), /-2\.\.2/);
});

t.test("sessions take toolChoice too: the first call is forced, later turns are the model's", async (t) => {
  const s = engine.createSession({ prompt: "hello", tools: TOOLS, mode: "sync", toolChoice: { name: "echo" }, temperature: 0.7, seed: 4, maxTokens: 150 });
  const done = await s.finished;
  const calls = s.events.filter((e) => e.type === "call");
  t.ok(calls.length >= 1, `${calls.length} call(s), ended ${done.reason}`);
  t.equal(calls[0]?.type === "call" ? calls[0].tool : undefined, "echo");
});
