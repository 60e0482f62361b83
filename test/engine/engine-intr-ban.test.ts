/**
 * @module The model never emits `[INTR]`, even with the call grammar off and
 * a model that strongly prefers it: a bare sequence sampling with a strong
 * positive logit on `[INTR]` emits it often (so the test can fail), while the
 * engine, given the same extra logit (added to the model's), never does.
 */
import t from "tap";
import { TokenBias, type Token } from "node-llama-cpp";
import { CML, CML_MARKERS } from "../../common/src/index.js";
import { SPECIAL_TOKEN_IDS } from "../../engine-pod/src/model/index.js";
import { startEngine, TOOLS } from "./engine-fixture.js";

const STEPS = 400;
const BOOST = 8;
const TEMPERATURE = 1.5;

// Generated models have the markers as fixed control tokens (checked below against the loaded model).
const intrId = (SPECIAL_TOKEN_IDS.cmlFirst + CML_MARKERS.indexOf(CML.INTR)) as Token;

const { engine, runtime: rt } = await startEngine(
  t,
  { sequences: 2, contextSize: 4096, maxTokens: STEPS, prefixCache: false },
  { extraLogitBias: new Map([[intrId, BOOST]]) },
);

t.test("the generated model has [INTR] as one control token", async (t) => {
  t.equal(rt.markerIds[CML.INTR].length, 1);
  t.equal(rt.markerIds[CML.INTR][0], intrId);
});

t.test("with a strong preference, bare sampling emits [INTR]; the engine never does", async (t) => {
  // Control: a bare sequence of the same context, the same boost, no ban.
  const seq = rt.sequences[1]!;
  const boost = new TokenBias(rt.model.tokenizer).set(intrId, { logit: BOOST });
  let emittedRaw = 0;
  let steps = 0;
  const gen = seq.evaluate(rt.tokenizeText("sample freely"), { temperature: TEMPERATURE, topK: 0, topP: 1, seed: 7, tokenBias: boost, yieldEogToken: true });
  for (let r = await gen.next(); r.done !== true && steps < STEPS; r = await gen.next()) {
    steps++;
    if (r.value === intrId) emittedRaw++;
  }
  await gen.return();
  await seq.clearHistory();
  t.ok(emittedRaw >= 5, `without the ban [INTR] was sampled ${emittedRaw} times in ${steps} steps`);

  // The engine: grammar off, same temperature and boost; only the ban stands between the model and [INTR].
  const s = engine.createSession({ prompt: "sample freely", tools: TOOLS, grammar: false, temperature: TEMPERATURE, seed: 7, maxTokens: STEPS });
  const done = await s.finished;
  const tr = s.inspect().tokens;
  t.ok(tr.sampled.length >= STEPS / 2, `${tr.sampled.length} steps sampled through the engine (${done.reason})`);
  t.equal(tr.sampled.filter((tk) => tk === intrId).length, 0, "the engine never sampled [INTR]");
  t.equal(s.events.filter((e) => e.type === "call_error" && /INTR/.test(e.message)).length, 0, "no forged interrupt reported");
});
