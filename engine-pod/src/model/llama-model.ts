/**
 * @module LLaMA-architecture GGUF content: the `general.*`, `llama.*` and
 * `tokenizer.*` metadata llama.cpp requires, and the tensor list with seeded
 * random weights scaled so activations stay O(1) through every layer.
 */
import { gguf, type GgufFileSpec, type GgufValue, type TensorSpec } from "./gguf-writer.js";
import { Prng } from "./prng.js";
import type { ModelPreset } from "./presets.js";
import { buildVocabulary, CHATML_TEMPLATE, SPECIAL_TOKEN_IDS } from "./tokenizer.js";

/** Bumped whenever the bytes a preset produces change on purpose (it names cache files). */
export const GENERATOR_VERSION = 1;

/** llama.cpp `llama_ftype`: 0 = all F32, 1 = mostly F16. */
function fileType(preset: ModelPreset): number {
  return preset.tensorType === "f32" ? 0 : 1;
}

/** Builds the complete GGUF description of a model; tensor data is generated lazily from `seed`. */
export function buildLlamaGguf(preset: ModelPreset, seed: number): GgufFileSpec {
  if (preset.nEmbd % preset.nHead !== 0) throw new Error(`n_embd ${preset.nEmbd} not divisible by n_head ${preset.nHead}`);
  if (preset.nHead % preset.nHeadKv !== 0) throw new Error(`n_head ${preset.nHead} not divisible by n_head_kv ${preset.nHeadKv}`);
  const vocab = buildVocabulary(preset.vocabSize, preset.vocabulary);
  const nVocab = vocab.tokens.length;
  const headDim = preset.nEmbd / preset.nHead;
  const nEmbdKv = headDim * preset.nHeadKv;

  const metadata: Array<[string, GgufValue]> = [
    ["general.architecture", gguf.str("llama")],
    ["general.name", gguf.str(`interlace-${preset.name}-seed${seed}`)],
    ["general.description", gguf.str(`Interlace generated model (random weights): ${preset.description}`)],
    ["general.file_type", gguf.u32(fileType(preset))],
    ["general.alignment", gguf.u32(32)],
    ["llama.vocab_size", gguf.u32(nVocab)],
    ["llama.context_length", gguf.u32(preset.contextLength)],
    ["llama.embedding_length", gguf.u32(preset.nEmbd)],
    ["llama.block_count", gguf.u32(preset.nLayer)],
    ["llama.feed_forward_length", gguf.u32(preset.nFf)],
    ["llama.attention.head_count", gguf.u32(preset.nHead)],
    ["llama.attention.head_count_kv", gguf.u32(preset.nHeadKv)],
    ["llama.attention.layer_norm_rms_epsilon", gguf.f32(preset.rmsEps)],
    ["llama.rope.dimension_count", gguf.u32(headDim)],
    ["llama.rope.freq_base", gguf.f32(preset.ropeFreqBase)],
    ["tokenizer.ggml.model", gguf.str("llama")],
    ["tokenizer.ggml.tokens", gguf.strings(vocab.tokens)],
    ["tokenizer.ggml.scores", gguf.f32s(vocab.scores)],
    ["tokenizer.ggml.token_type", gguf.i32s(vocab.types)],
    ["tokenizer.ggml.bos_token_id", gguf.u32(SPECIAL_TOKEN_IDS.bos)],
    ["tokenizer.ggml.eos_token_id", gguf.u32(SPECIAL_TOKEN_IDS.eos)],
    ["tokenizer.ggml.unknown_token_id", gguf.u32(SPECIAL_TOKEN_IDS.unk)],
    ["tokenizer.ggml.padding_token_id", gguf.u32(SPECIAL_TOKEN_IDS.pad)],
    ["tokenizer.ggml.add_bos_token", gguf.bool(true)],
    ["tokenizer.ggml.add_eos_token", gguf.bool(false)],
    // No implicit leading "▁": tokenize(a + b) then equals tokenize(a) ++ tokenize(b)
    // at word boundaries, which keeps injected interrupt text predictable.
    ["tokenizer.ggml.add_space_prefix", gguf.bool(false)],
    ["tokenizer.chat_template", gguf.str(CHATML_TEMPLATE)],
  ];

  const type = preset.tensorType;
  const random = (name: string, dims: number[], std: number): TensorSpec => ({
    name,
    dims,
    type,
    data: () => Prng.forName(seed, name).fillUniform(new Float32Array(dims.reduce((a, b) => a * b, 1)), std),
  });
  const ones = (name: string, n: number): TensorSpec => ({
    name,
    dims: [n],
    // Norm weights stay F32 in every llama.cpp conversion (they are tiny and precision-sensitive).
    type: "f32",
    data: () => new Float32Array(n).fill(1),
  });
  // Matrices are [ne0 = fan_in, ne1 = fan_out]; std 1/sqrt(fan_in) keeps each projection's output at unit scale.
  const matrix = (name: string, fanIn: number, fanOut: number): TensorSpec => random(name, [fanIn, fanOut], 1 / Math.sqrt(fanIn));

  const tensors: TensorSpec[] = [random("token_embd.weight", [preset.nEmbd, nVocab], 1)];
  for (let i = 0; i < preset.nLayer; i++) {
    const p = `blk.${i}`;
    tensors.push(
      ones(`${p}.attn_norm.weight`, preset.nEmbd),
      matrix(`${p}.attn_q.weight`, preset.nEmbd, preset.nEmbd),
      matrix(`${p}.attn_k.weight`, preset.nEmbd, nEmbdKv),
      matrix(`${p}.attn_v.weight`, preset.nEmbd, nEmbdKv),
      // Residual branches are scaled down by sqrt(2 * n_layer) so the residual stream grows slowly with depth.
      random(`${p}.attn_output.weight`, [preset.nEmbd, preset.nEmbd], 1 / Math.sqrt(preset.nEmbd * 2 * preset.nLayer)),
      ones(`${p}.ffn_norm.weight`, preset.nEmbd),
      matrix(`${p}.ffn_gate.weight`, preset.nEmbd, preset.nFf),
      matrix(`${p}.ffn_up.weight`, preset.nEmbd, preset.nFf),
      random(`${p}.ffn_down.weight`, [preset.nFf, preset.nEmbd], 1 / Math.sqrt(preset.nFf * 2 * preset.nLayer)),
    );
  }
  tensors.push(ones("output_norm.weight", preset.nEmbd));
  const suppressed = preset.suppressEndOfGeneration ? [SPECIAL_TOKEN_IDS.eos, SPECIAL_TOKEN_IDS.imEnd] : [];
  tensors.push({
    name: "output.weight",
    dims: [preset.nEmbd, nVocab],
    type,
    data: () => {
      const w = Prng.forName(seed, "output.weight").fillUniform(new Float32Array(preset.nEmbd * nVocab), preset.logitGain / Math.sqrt(preset.nEmbd));
      for (const id of suppressed) w.fill(0, id * preset.nEmbd, (id + 1) * preset.nEmbd);
      return w;
    },
  });
  return { metadata, tensors };
}
