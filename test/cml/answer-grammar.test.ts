/**
 * @module The answer grammar (`response_format`), parsed by llama.cpp: it
 * accepts exactly one JSON value of the schema (any object for
 * `json_object`) with a little whitespace around it, and the `[CALL]`
 * opening only where the completion has tools and before the answer starts.
 */
import t from "tap";
import { getLlama, LlamaLogLevel, type Llama, type LlamaGrammar } from "node-llama-cpp";
import type { JsonSchema } from "../../common/src/index.js";
import { buildAnswerGrammar } from "../../engine-pod/src/cml/index.js";

/** Internal node-llama-cpp check (pinned version): does the grammar accept this whole text? */
const accepts = (g: LlamaGrammar, text: string): boolean => (g as unknown as { _testText(s: string): boolean })._testText(text);

const SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 5 },
    tags: { type: "array", items: { enum: ["a", "b"] }, maxItems: 2 },
    where: { type: "object", properties: { lat: { type: "number" } }, required: ["lat"] },
  },
  required: ["name", "where"],
};

let llama: Llama;
t.before(async () => {
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
});

t.test("json_schema: one value of the schema, nothing before or after but whitespace", async (t) => {
  const g = await llama.createGrammar({ grammar: buildAnswerGrammar({ type: "json_schema", schema: SCHEMA }, { allowCall: false }) });
  for (const good of ['{"name": "ab", "where": {"lat": 1.5}}', '\n{"name":"ab","tags":["b"],"where":{"lat":-2}}\n']) t.ok(accepts(g, good), `accepts ${JSON.stringify(good)}`);
  const bad = [
    '{"name": "abcdef", "where": {"lat": 1}}', // maxLength
    '{"name": "ab"}', // required
    '{"name": "ab", "tags": ["c"], "where": {"lat": 1}}', // enum
    '{"name": "ab", "where": {"lat": 1}} and more', // text after
    'Sure: {"name": "ab", "where": {"lat": 1}}', // text before
    '[CALL]', // no tools
  ];
  for (const s of bad) t.notOk(accepts(g, s), `rejects ${JSON.stringify(s)}`);
});

t.test("json_object: any object, not another JSON value", async (t) => {
  const g = await llama.createGrammar({ grammar: buildAnswerGrammar({ type: "json_object" }, { allowCall: false }) });
  t.ok(accepts(g, '{"a": [1, {"b": null}], "c": "d"}'));
  t.ok(accepts(g, "{}"));
  for (const s of ["[1, 2]", '"text"', "42", "plain words"]) t.notOk(accepts(g, s), `rejects ${s}`);
});

t.test("with tools, the turn may open a call block instead of answering (the call grammar takes over there)", async (t) => {
  const g = await llama.createGrammar({ grammar: buildAnswerGrammar({ type: "json_object" }, { allowCall: true }) });
  t.ok(accepts(g, "[CALL]"));
  t.ok(accepts(g, "\n[CALL]"));
  t.ok(accepts(g, '{"a": 1}'));
  t.notOk(accepts(g, '{"a": 1}[CALL]'), "not once the answer is written");
  const ids = buildAnswerGrammar({ type: "json_object" }, { allowCall: true, markerTokens: new Map([[7, "[CALL]"]]) });
  t.match(ids, /<\[7\]>/, "a marker the model has as a token is referred to by id");
});
