/**
 * @module O2 on real llama.cpp (the generated `test` model): a drafted call
 * is validated in one pass; a matching draft is accepted whole; at the first
 * mismatched token the draft is cut and decoding continues with exactly the
 * greedy output it has without a draft; a scripted target is compared instead
 * of the model's choice; the draft model writes tokens as real forward passes.
 */
import t from "tap";
import { getLlama, LlamaLogLevel, type LlamaContextSequence, type Token } from "node-llama-cpp";
import { createLogger } from "../../common/src/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { validateDraft } from "../../engine-pod/src/kv/index.js";
import { DraftModel } from "../../engine-pod/src/speculation/index.js";

const N = 16;

t.test("O2 validation against greedy decoding", async (t) => {
  const modelPath = await ensureModel({ preset: "test" });
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false, maxThreads: 1 });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ sequences: 2, contextSize: 512, threads: 1 });
  t.teardown(async () => {
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  });
  const prompt = model.tokenize("the weather in paris is", false, "trimLeadingSpace");
  const [a, b] = [context.getSequence(), context.getSequence()];

  const greedy = async (seq: LlamaContextSequence, first: Token[], n: number): Promise<Token[]> => {
    const out: Token[] = [];
    const gen = seq.evaluate(first, { temperature: 0 });
    for (let r = await gen.next(); r.done !== true && out.length < n; r = await gen.next()) out.push(r.value);
    await gen.return();
    return out;
  };
  const reference = await greedy(a, prompt, N);
  t.equal(reference.length, N);

  const prime = async (seq: LlamaContextSequence): Promise<void> => {
    await seq.clearHistory();
    await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
  };

  await t.test("a matching draft is accepted whole in one pass", async (t) => {
    await prime(b);
    const base = b.nextTokenIndex;
    const v = await validateDraft(b, { pending: prompt.at(-1)!, draft: reference.slice(0, 10), maxDraftTokens: 10 });
    t.same(v.accepted, reference.slice(0, 10));
    t.equal(v.feed, reference[9]);
    t.equal(b.nextTokenIndex, base + 10, "pending + 9 accepted in the cache; the 10th is fed next");
    const rest = await greedy(b, [v.feed], N - 10);
    t.same([...v.accepted, ...rest], reference, "same greedy continuation");
  });

  await t.test("the first mismatch cuts the draft; output equals decoding without a draft", async (t) => {
    await prime(b);
    const wrong = ((reference[6]! + 1) % model.tokens.bos! === 0 ? reference[6]! + 2 : reference[6]! + 1) as Token;
    const draft = [...reference.slice(0, 6), wrong, ...reference.slice(7, 12)];
    const base = b.nextTokenIndex;
    const v = await validateDraft(b, { pending: prompt.at(-1)!, draft, maxDraftTokens: 32 });
    t.equal(v.proposed, 12);
    t.same(v.accepted, reference.slice(0, 6));
    t.equal(b.nextTokenIndex, base + 6, "rejected tail erased");
    const rest = await greedy(b, [v.feed], N - 6);
    t.same([...v.accepted, ...rest], reference);
  });

  await t.test("a mismatch at the first token accepts nothing and changes nothing", async (t) => {
    await prime(b);
    const base = b.nextTokenIndex;
    const v = await validateDraft(b, { pending: prompt.at(-1)!, draft: [(reference[0]! + 1) as Token, reference[1]!], maxDraftTokens: 8 });
    t.same(v.accepted, []);
    t.equal(v.feed, prompt.at(-1));
    t.equal(b.nextTokenIndex, base);
    t.same(await greedy(b, [v.feed], N), reference);
  });

  await t.test("max draft tokens bounds the proposal; a scripted target is compared instead of the model", async (t) => {
    await prime(b);
    const script = [5, 6, 7, 8, 9].map((x) => x as Token);
    const v = await validateDraft(b, { pending: prompt.at(-1)!, draft: [5, 6, 7, 1, 9].map((x) => x as Token), maxDraftTokens: 4, expected: script });
    t.equal(v.proposed, 4);
    t.same(v.accepted, [5, 6, 7]);
  });

  await t.test("the draft model writes a call as real forward passes, reusing its history prefix", async (t) => {
    const draft = await DraftModel.load(llama, { modelPath, sequences: 1, contextSize: 256, threads: 1 }, createLogger("test", "warn"));
    t.teardown(() => draft.close());
    const history = draft.tokenize("user: weather in paris? assistant:");
    const call = draft.tokenize('{"name":"weather","arguments":{"city":"paris"}}');
    const r1 = await draft.run(history, call);
    t.equal(r1.prefilled, history.length);
    t.equal(r1.decoded, call.length, "one decode step per call token");
    t.ok(r1.ms > 0);
    const r2 = await draft.run([...history, ...call], call);
    t.ok(r2.prefilled < call.length + 2, `prefix reused (prefilled ${r2.prefilled})`);
  });
});
