/**
 * @module Preset sanity without generating weights: every preset is a valid
 * LLaMA shape with a context of at least 4096 tokens (bench tests use
 * 2048-token contexts), and the bench preset has the real-model-sized
 * vocabulary its decode cost relies on.
 */
import t from "tap";
import { buildLlamaGguf, encodeGgufHeader, ggufFileSize, isPresetName, modelFileName, PRESET_NAMES, PRESETS } from "../../engine-pod/src/model/index.js";

for (const name of PRESET_NAMES) {
  t.test(`preset ${name}`, async (t) => {
    const p = PRESETS[name];
    t.equal(p.name, name);
    t.ok(p.contextLength >= 4096, "context length >= 4096");
    t.equal(p.nEmbd % p.nHead, 0, "head dim is whole");
    t.equal(p.nHead % p.nHeadKv, 0, "GQA groups are whole");
    const spec = buildLlamaGguf(p, 1);
    const meta = new Map(spec.metadata);
    const u32 = (key: string): unknown => {
      const v = meta.get(key);
      return v !== undefined && v.kind !== "array" ? v.value : undefined;
    };
    for (const key of [
      "llama.context_length",
      "llama.embedding_length",
      "llama.block_count",
      "llama.feed_forward_length",
      "llama.attention.head_count",
      "llama.attention.head_count_kv",
      "llama.rope.dimension_count",
      "llama.attention.layer_norm_rms_epsilon",
      "general.file_type",
      "tokenizer.ggml.model",
      "tokenizer.chat_template",
    ]) {
      t.ok(meta.has(key), `has ${key}`);
    }
    t.equal(u32("llama.rope.dimension_count"), p.nEmbd / p.nHead);
    const tokens = meta.get("tokenizer.ggml.tokens");
    const nVocab = tokens?.kind === "array" ? tokens.values.length : 0;
    if (p.vocabSize !== undefined) t.equal(nVocab, p.vocabSize, "vocabulary padded to size");
    t.equal(u32("llama.vocab_size"), nVocab);
    const embd = spec.tensors.find((x) => x.name === "token_embd.weight");
    t.same(embd?.dims, [p.nEmbd, nVocab], "token_embd is [n_embd, n_vocab]");
    t.same(spec.tensors.find((x) => x.name === "blk.0.ffn_down.weight")?.dims, [p.nFf, p.nEmbd], "ffn_down is [n_ff, n_embd]");
    t.same(spec.tensors.find((x) => x.name === "blk.0.attn_k.weight")?.dims, [p.nEmbd, (p.nEmbd / p.nHead) * p.nHeadKv]);
    t.ok(ggufFileSize(spec) > encodeGgufHeader(spec).length);
    t.match(modelFileName({ preset: name, seed: 5 }), new RegExp(`^interlace-${name}-seed5-g\\d+-[0-9a-f]{8}\\.gguf$`));
  });
}

t.test("bench is the larger model, test the tiny one", async (t) => {
  t.ok(ggufFileSize(buildLlamaGguf(PRESETS.test, 1)) < 4 << 20, "test preset under 4 MB");
  t.ok(ggufFileSize(buildLlamaGguf(PRESETS.bench, 1)) > 100 << 20, "bench preset over 100 MB");
  t.ok(isPresetName("bench"));
  t.notOk(isPresetName("huge"));
  t.not(modelFileName({ preset: { ...PRESETS.test, nLayer: 3 } }), modelFileName({ preset: "test" }), "a changed shape gets its own cache file");
});
