/**
 * @module Multi-byte text (Korean, Japanese, Chinese, emoji with modifiers
 * and joiners, accents, Hebrew, Arabic, astral CJK) on the decode loop's
 * token path, without decoding, on the generated `test` model (SPM with byte
 * fallback), the generated `bench` model (cl100k byte-level BPE, where one
 * Korean character spans several tokens) and Gemma 3 270M when present:
 * tokenizer → streaming detokenizer → token monitor → call parser, for call
 * blocks as a scripted policy writes them (JSON and Python style, two calls
 * to the same tool back to back), and interrupt blocks as the engine injects
 * them (the transcript a policy or a restarted request reads back).
 */
import t from "tap";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { CML, formatCallBlock, formatInterruptBlock } from "../../common/src/index.js";
import { findMarkerTokens } from "../../engine-pod/src/cml/index.js";
import { markerTokenIds, tokenizeCml } from "../../engine-pod/src/engine/runtime.js";
import { formatCallBody, scanTranscript } from "../../engine-pod/src/policy/index.js";
import { MODELS, runTokens, SAMPLES } from "./multibyte-fixture.js";

for (const m of MODELS) {
  t.test(`token path on ${m.name}: tokenizer, detokenizer, monitor, call parser, transcript`, { skip: m.skip }, async (t) => {
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: await m.path() });
    t.teardown(async () => {
      await model.dispose();
      await llama.dispose();
    });
    const ids = markerTokenIds(model, findMarkerTokens(model).markerTokens);

    for (const text of SAMPLES) {
      const tokens = model.tokenize(text, false, "trimLeadingSpace");
      t.equal(runTokens(model, tokens).text, text, `${text}: streamed token by token, the text is exact`);
    }

    for (const style of ["json", "python"] as const) {
      for (let i = 0; i < SAMPLES.length; i++) {
        const a = { text: SAMPLES[i]!, lang: "ko" };
        const b = { text: SAMPLES[(i + 1) % SAMPLES.length]! };
        const transcript = `Sure. ${formatCallBlock(formatCallBody("say", a, style), "c1")}${formatCallBlock(formatCallBody("say", b, style), "c2")}`;
        const r = runTokens(model, tokenizeCml(model, ids, transcript));
        t.same(r.problems, [], `${style} ${a.text}: no parse problem`);
        t.same(r.calls, [a, b], `${style} ${a.text}: both calls to the same tool, exact arguments`);
        t.equal(r.text, transcript, `${style} ${a.text}: the raw text is the transcript`);
      }
    }

    // Interrupt blocks as the engine injects them: markers as their ids, id and value as plain text.
    for (const [i, value] of SAMPLES.entries()) {
      const tokens = [...ids[CML.INTR], ...model.tokenize(`u${i}`, false, "trimLeadingSpace"), ...ids[CML.HEAD], ...model.tokenize(value, false, "trimLeadingSpace"), ...ids[CML.END]];
      const text = runTokens(model, tokens).text;
      t.equal(text, formatInterruptBlock(`u${i}`, value), `${value}: the injected block reads back exactly`);
      t.ok(scanTranscript(`${text}${formatCallBlock('{"name":"say","arguments":{"text":"x"}}', "c9")}`).injected.has(`u${i}`), "the transcript scan finds its id");
    }
  });
}

