import t from "tap";
import { getLlama, LlamaGrammarEvaluationState, LlamaLogLevel, TokenBias, type Llama, type LlamaGrammar, type Token } from "node-llama-cpp";
import { CML, type CmlMarker, type ToolSpec } from "../../common/src/index.js";
import {
  buildCallGrammar,
  createCallGrammar,
  createIntrTokenBias,
  createTokenMonitor,
  findMarkerTokens,
  intrLogitBias,
  INTR_LOGIT,
  parseCallBody,
  type MonitorEvent,
} from "../../engine-pod/src/cml/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";

const TOOLS: ToolSpec[] = [
  {
    name: "add",
    description: "Adds two numbers.",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  },
  {
    name: "search",
    description: "Web search.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", maxLength: 12 },
        limit: { type: "integer" },
        mode: { type: "string", enum: ["fast", "deep"] },
        tags: { type: "array", items: { type: "string" }, maxItems: 2 },
        filters: { type: "object", properties: { lang: { type: ["string", "null"] }, strict: { type: "boolean" } }, required: ["lang"] },
        extra: {},
      },
      required: ["query"],
    },
  },
  { name: "geo.area", description: "BFCL-style types", parameters: { type: "dict", properties: { r: { type: "float" }, pts: { type: "tuple", items: { type: "integer" } }, any: { type: "any" } }, required: ["r"] } },
  { name: "noargs", description: "", parameters: { type: "object", properties: {} } },
  { name: "pick", description: "", parameters: { type: "object", properties: { v: { anyOf: [{ type: "integer" }, { const: "auto" }] } }, required: ["v"] } },
];

/** Internal node-llama-cpp check (pinned version): does the grammar accept this whole text? */
const accepts = (g: LlamaGrammar, text: string): boolean => (g as unknown as { _testText(s: string): boolean })._testText(text);

let llama: Llama;
t.before(async () => {
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
});

t.test("llama.cpp parses the grammar; text-marker form accepts valid calls and rejects invalid ones", async (t) => {
  const g = await llama.createGrammar({ grammar: buildCallGrammar(TOOLS) });
  const good = [
    '{"name": "add", "arguments": {"a": 1, "b": -2.5e3}}[END]',
    'c1[HEAD]{"name":"search","arguments":{"query":"x","mode":"deep","tags":["a","b"],"filters":{"lang":null,"strict":true},"extra":{"k":[1,"v"]}}}[END]',
    '{"name": "search", "arguments": {"query": "q\\"\\u00e9", "limit": 3}}[END]',
    '{"name": "geo.area", "arguments": {"r": 1.5, "pts": [1, 2]}}[END]',
    '{"name": "noargs", "arguments": {}}[END]',
    '{"name": "pick", "arguments": {"v": "auto"}}[END]',
  ];
  for (const s of good) {
    t.ok(accepts(g, s), `accepts ${s}`);
    t.ok(parseCallBody(s.replace(/^.*\[HEAD\]/, "").replace("[END]", ""), TOOLS).ok, `and the parser agrees: ${s}`);
  }
  const bad = [
    '{"name": "mul", "arguments": {}}[END]', // unknown tool
    '{"name": "add", "arguments": {"a": 1}}[END]', // missing required
    '{"name": "add", "arguments": {"a": "1", "b": 2}}[END]', // wrong type
    '{"name": "add", "arguments": {"b": 1, "a": 2}}[END]', // property order is fixed
    '{"name": "search", "arguments": {"query": "x", "mode": "slow"}}[END]', // not in enum
    '{"name": "search", "arguments": {"query": "0123456789abc"}}[END]', // maxLength
    '{"name": "search", "arguments": {"query": "x", "tags": ["a", "b", "c"]}}[END]', // maxItems
    '{"name": "search", "arguments": {"query": "x", "filters": {}}}[END]', // nested required
    '{"name": "geo.area", "arguments": {"r": 1, "pts": [1.5]}}[END]', // tuple of integers
    '{"name": "add", "arguments": {"a": 1, "b": 2}}', // no [END]
    '[HEAD]{"name": "noargs", "arguments": {}}[END]', // empty id
    '{"name": "pick", "arguments": {"v": "manual"}}[END]',
  ];
  for (const s of bad) t.notOk(accepts(g, s), `rejects ${s}`);
});

t.test("control-token markers are referred to by id, and grammar options are honoured", async (t) => {
  const markerTokens = new Map<number, CmlMarker>([[9, CML.END], [10, CML.HEAD]]);
  const text = buildCallGrammar(TOOLS, { markerTokens, callId: "required", maxStringLength: 4, maxArrayItems: 2 });
  t.match(text, /<\[9\]>/);
  t.match(text, /<\[10\]>/);
  t.notMatch(text, /\[END\]"/, "no literal [END] when the model has the token");
  await t.resolves(llama.createGrammar({ grammar: text }), "llama.cpp parses token references");
  const none = await llama.createGrammar({ grammar: buildCallGrammar(TOOLS, { callId: "none", maxStringLength: 4 }) });
  t.notOk(accepts(none, 'c1[HEAD]{"name": "noargs", "arguments": {}}[END]'), "callId none forbids ids");
  t.notOk(accepts(none, '{"name": "search", "arguments": {"query": "abcde"}}[END]'), "maxStringLength caps strings");
  t.throws(() => buildCallGrammar([]), /no tools/);
  const a = createCallGrammar(llama, TOOLS, { markerTokens });
  t.equal(createCallGrammar(llama, TOOLS, { markerTokens }), a, "createCallGrammar parses a tool set once");
  t.not(createCallGrammar(llama, TOOLS.slice(1), { markerTokens }), a);
  t.equal((await a).grammar, buildCallGrammar(TOOLS, { markerTokens }));
});

t.test("greedy decoding of a generated model under the grammar yields calls the parser accepts", async (t) => {
  const model = await llama.loadModel({ modelPath: await ensureModel({ preset: "test" }) });
  t.teardown(() => model.dispose());
  const { markerTokens, forgeable, textOnly } = findMarkerTokens(model);
  t.equal(markerTokens.size, 5, "all five markers are single tokens");
  t.same(forgeable, [], "none of them can be produced from plain text");
  t.same(textOnly, []);
  const ids = new Map([...markerTokens].map(([id, m]) => [m, id as Token]));
  const context = await model.createContext({ contextSize: 1024, threads: 1, sequences: 1 });
  t.teardown(() => context.dispose());
  const seq = context.getSequence();
  const grammar = await llama.createGrammar({ grammar: buildCallGrammar(TOOLS, { markerTokens, maxStringLength: 8, maxArrayItems: 3, maxGenericDepth: 1 }) });
  const bias = createIntrTokenBias(model, markerTokens);

  for (const prompt of ["<|im_start|>user\nAdd 1 and 2.<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\nSearch the web.<|im_end|>\n<|im_start|>assistant\nSure. "]) {
    await seq.clearHistory();
    const monitor = createTokenMonitor({ markerTokens });
    const events: MonitorEvent[] = [];
    const start = [...model.tokenize(prompt, true), ids.get(CML.CALL)!];
    events.push(...monitor.push(ids.get(CML.CALL)!, ""));
    const state = new LlamaGrammarEvaluationState({ model, grammar });
    const generated: Token[] = [];
    for await (const token of seq.evaluate(start, { grammarEvaluationState: state, tokenBias: bias })) {
      generated.push(token);
      events.push(...monitor.push(token, model.detokenize([token], false, generated.slice(-8, -1))));
      if (token === ids.get(CML.END) || generated.length >= 400) break;
    }
    t.equal(generated.at(-1), ids.get(CML.END), "the block ends with the [END] control token");
    t.notOk(generated.includes(ids.get(CML.INTR)!), "no [INTR]");
    const call = events.find((e): e is Extract<MonitorEvent, { type: "call" }> => e.type === "call");
    t.ok(call, `monitor saw a call: ${JSON.stringify(events)}`);
    const parsed = parseCallBody(call!.body, TOOLS);
    t.ok(parsed.ok, `parseCallBody accepts ${call!.body}: ${JSON.stringify(parsed)}`);
    t.equal(parsed.ok && parsed.style, "json");
  }
});

t.test("the [INTR] bias wins over the model even where a grammar allows [INTR]", async (t) => {
  const model = await llama.loadModel({ modelPath: await ensureModel({ preset: "test" }) });
  t.teardown(() => model.dispose());
  const { markerTokens } = findMarkerTokens(model);
  const intr = [...markerTokens].find(([, m]) => m === CML.INTR)![0] as Token;
  t.same([...intrLogitBias(markerTokens)], [[intr, INTR_LOGIT]]);
  t.same([...intrLogitBias(new Map())], [], "no bias for a model without the token");
  const context = await model.createContext({ contextSize: 256, threads: 1 });
  t.teardown(() => context.dispose());
  const seq = context.getSequence();
  // The grammar allows exactly two first tokens: [INTR] or [TRAP]. Push the model hard towards
  // [INTR] to show the direction matters, then apply the engine's bias.
  const trap = [...markerTokens].find(([, m]) => m === CML.TRAP)![0] as Token;
  const grammar = await llama.createGrammar({ grammar: `root ::= <[${intr}]> | <[${trap}]>` });
  const first = async (bias: TokenBias): Promise<Token> => {
    await seq.clearHistory();
    const state = new LlamaGrammarEvaluationState({ model, grammar });
    for await (const tok of seq.evaluate(model.tokenize("<|im_start|>assistant\n", true), { grammarEvaluationState: state, tokenBias: bias })) return tok;
    throw new Error("no token");
  };
  const towards = new TokenBias(model.tokenizer).set(intr, { logit: 50 });
  t.equal(await first(towards), intr, "control: a positive logit makes [INTR] win");
  t.equal(await first(createIntrTokenBias(model, markerTokens)), trap, "the engine's bias keeps [INTR] out, and the sampler does not wedge");
});
