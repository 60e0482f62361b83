/**
 * @module Public surface of the model generator: deterministic GGUF v3 LLaMA
 * models with seeded random weights and an SPM tokenizer whose CML markers
 * are control tokens. Engines and tests call {@link ensureModel}.
 */
export { ensureModel, generateModel, modelFileName, defaultModelCacheDir, sha256File } from "./ensure-model.js";
export type { ModelRequest, EnsureModelOptions } from "./ensure-model.js";
export { PRESETS, PRESET_NAMES, isPresetName } from "./presets.js";
export type { ModelPreset, PresetName } from "./presets.js";
export { buildVocabulary, specialFragments, TokenType, SPECIAL_TOKEN_IDS, CHATML, CHATML_TEMPLATE, SPM_SPACE } from "./tokenizer.js";
export type { Vocabulary, VocabularySource } from "./tokenizer.js";
export { cl100kRanks, parseBpeRanks } from "./cl100k-ranks.js";
export type { BpeRank } from "./cl100k-ranks.js";
export { buildLlamaGguf, GENERATOR_VERSION } from "./llama-model.js";
export { writeGguf, encodeGgufHeader, ggufFileSize, gguf, GgufValueType, GgmlType, GGUF_ALIGNMENT, f32ToF16Bits } from "./gguf-writer.js";
export type { GgufValue, GgufFileSpec, TensorSpec, TensorType } from "./gguf-writer.js";
export { Prng, fnv1a32 } from "./prng.js";
