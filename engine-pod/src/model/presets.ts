/**
 * @module Model presets: the shapes of the generated LLaMA models. `test` is
 * tiny (loads and decodes in milliseconds); `bench` decodes at roughly
 * 10–30 ms per token on one CPU thread, like a GPU-served 3–8B model.
 * Measured on the 2-core AMD EPYC build machine (node-llama-cpp 3.22.1,
 * threads: 1): 512 x 8 / n_ff 1376 with a 900-token vocabulary decoded at only
 * ~3.4 ms per token, so `bench` is wider and has a realistic 32k vocabulary:
 * the most frequent ~31k tokens of OpenAI's cl100k_base BPE, so a tool call or
 * a sentence costs about as many tokens as with a real model's tokenizer
 * (13 BFCL-style calls and sentences: 206 tokens; Gemma 3: 216; see
 * test/model/bpe-vocabulary.test.ts).
 */
import type { TensorType } from "./gguf-writer.js";
import type { VocabularySource } from "./tokenizer.js";

/** Hyperparameters of one generated model. */
export interface ModelPreset {
  readonly name: string;
  readonly description: string;
  readonly nEmbd: number;
  readonly nLayer: number;
  readonly nHead: number;
  readonly nHeadKv: number;
  readonly nFf: number;
  /** `llama.context_length`: the training context the runtime may use. */
  readonly contextLength: number;
  readonly ropeFreqBase: number;
  readonly rmsEps: number;
  readonly tensorType: TensorType;
  /**
   * Total vocabulary size; the core vocabulary (~1,200 tokens) is padded up
   * to it from {@link vocabulary}. Omitted: the core vocabulary only (with
   * `core`) or every usable cl100k token (with `cl100k`).
   */
  readonly vocabSize?: number;
  /**
   * What pads the vocabulary up to {@link vocabSize}: filler pseudo-words
   * (`core`, the default) or cl100k_base BPE tokens (`cl100k`: tool calls and
   * English cost as many tokens as with a real model's tokenizer). Part of the
   * preset, so it is part of the cache file name's hash.
   */
  readonly vocabulary?: VocabularySource;
  /**
   * Standard deviation of the logits (output weights scaled by
   * gain/sqrt(n_embd) after an RMS norm): large enough that greedy decoding
   * has a clear winner at each step.
   */
  readonly logitGain: number;
  /**
   * Zero the output rows of `</s>` and `<|im_end|>`: their logit is then 0,
   * far below the greedy winner, so random-weight models decode for as long
   * as asked instead of stopping at an arbitrary point.
   */
  readonly suppressEndOfGeneration: boolean;
}

export const PRESET_NAMES = ["test", "bench"] as const;
export type PresetName = (typeof PRESET_NAMES)[number];

/** The presets by name. */
export const PRESETS: Readonly<Record<PresetName, ModelPreset>> = {
  test: {
    name: "test",
    description: "tiny LLaMA, 64 x 2 layers, F32: loads and decodes in milliseconds",
    nEmbd: 64,
    nLayer: 2,
    nHead: 4,
    nHeadKv: 4,
    nFf: 128,
    contextLength: 8192,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
    tensorType: "f32",
    logitGain: 3,
    suppressEndOfGeneration: true,
  },
  bench: {
    name: "bench",
    description:
      "LLaMA 768 x 8 layers, n_ff 2048, 32k cl100k_base BPE vocabulary, F32 (~420 MB): ~10-35 ms per token on one CPU thread, " +
      "prefill ~650 tokens/s (the wide output projection costs decode time, not prefill); 16k context",
    nEmbd: 768,
    nLayer: 8,
    nHead: 12,
    nHeadKv: 12,
    nFf: 2048,
    // Room for BFCL multi-step tasks: three entries' tool lists reach ~9.6k prompt tokens.
    contextLength: 16384,
    ropeFreqBase: 10000,
    rmsEps: 1e-5,
    tensorType: "f32",
    vocabSize: 32000,
    vocabulary: "cl100k",
    logitGain: 3,
    suppressEndOfGeneration: true,
  },
};

/** Type guard for preset names (CLI and config input). */
export function isPresetName(name: string): name is PresetName {
  return (PRESET_NAMES as readonly string[]).includes(name);
}
