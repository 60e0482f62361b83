/**
 * @module Checks a model and its LoRA adapters from their GGUF headers alone
 * (no weights are read), before anything is loaded: the files exist and are
 * GGUF, each adapter is a LoRA adapter for the model's architecture, and
 * every adapted tensor exists in the model with matching dimensions. A
 * failure names its reason (a `ModelCheckReason` of the shared module, which the
 * operator turns into an EnginePool status reason) and the file at fault, so
 * a wrong adapter is a clear message, not a crash inside llama.cpp. The check
 * also reads what an adapter declares about its prompt (written by
 * `npm run finetune`): `interlace.prompt.examples` and `interlace.prompt.instructions`,
 * and `interlace.prompt.format` — an adapter fine-tuned on the model's own
 * tool-call format (`--format native`) is refused where CML is spoken.
 */
import { existsSync, statSync } from "node:fs";
import { readGgufFileInfo, type GgufFileInfo } from "node-llama-cpp";
import { ModelCheckReason } from "../../../common/src/index.js";
import { DEFAULT_PROMPT_STYLE, type PromptExamples, type PromptInstructions, type PromptStyle } from "../prompt/index.js";
import type { AdapterOption } from "./engine-options.js";

export class ModelCheckError extends Error {
  override readonly name = "ModelCheckError";
  constructor(
    readonly reason: ModelCheckReason,
    message: string,
  ) {
    super(message);
  }
}

/** What an adapter says about itself. */
export interface AdapterInfo {
  path: string;
  scale: number;
  architecture: string;
  /** LoRA alpha and the rank of its first tensor pair. */
  alpha?: number;
  rank?: number;
  tensors: number;
  /** `interlace.prompt.examples` and `interlace.prompt.instructions`, when the adapter was trained by `npm run finetune`. */
  promptExamples?: PromptExamples;
  promptInstructions?: PromptInstructions;
  /** `general.name`, when set. */
  name?: string;
}

export interface ModelCheck {
  architecture: string;
  adapters: AdapterInfo[];
}

type Metadata = Record<string, unknown>;

function at(meta: Metadata, path: string): unknown {
  let v: unknown = meta;
  for (const key of path.split(".")) v = v !== null && typeof v === "object" ? (v as Metadata)[key] : undefined;
  return v;
}

async function readHeader(path: string, missing: ModelCheckReason, invalid: ModelCheckReason, what: string): Promise<GgufFileInfo> {
  if (!existsSync(path) || !statSync(path).isFile()) throw new ModelCheckError(missing, `${what} ${path}: no such file`);
  try {
    return await readGgufFileInfo(path, { sourceType: "filesystem", logWarnings: false, ignoreKeys: ["tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"] });
  } catch (err) {
    throw new ModelCheckError(invalid, `${what} ${path} is not a readable GGUF file: ${(err as Error).message}`);
  }
}

/** The calling format an adapter was fine-tuned for: CML (what the engine speaks) or the model's own tool-call format. */
export type AdapterCallFormat = "cml" | "native";

/**
 * Checks `modelPath` and `adapters` for a runtime that speaks `callFormat`
 * (the engine: CML); throws a {@link ModelCheckError} naming the first problem.
 */
export async function checkModel(modelPath: string, adapters: readonly AdapterOption[] = [], callFormat: AdapterCallFormat = "cml"): Promise<ModelCheck> {
  const model = await readHeader(modelPath, ModelCheckReason.ModelNotFound, ModelCheckReason.ModelInvalid, "model");
  const architecture = String(at(model.metadata as Metadata, "general.architecture") ?? "");
  const shapes = new Map((model.fullTensorInfo ?? model.tensorInfo ?? []).map((t) => [t.name, t.dimensions.map(Number)]));
  const infos: AdapterInfo[] = [];
  for (const adapter of adapters) {
    const file = await readHeader(adapter.path, ModelCheckReason.AdapterNotFound, ModelCheckReason.AdapterInvalid, "adapter");
    const meta = file.metadata as Metadata;
    const type = at(meta, "general.type");
    const adapterType = at(meta, "adapter.type");
    if (type !== "adapter" || adapterType !== "lora") {
      throw new ModelCheckError(ModelCheckReason.AdapterInvalid, `adapter ${adapter.path} is not a LoRA adapter (general.type ${String(type)}, adapter.type ${String(adapterType)})`);
    }
    const arch = String(at(meta, "general.architecture") ?? "");
    if (arch !== architecture) {
      throw new ModelCheckError(ModelCheckReason.AdapterIncompatible, `adapter ${adapter.path} is for ${arch || "an unknown architecture"}, the model ${modelPath} is ${architecture}`);
    }
    const tensors = file.tensorInfo ?? [];
    let rank: number | undefined;
    for (const t of tensors) {
      const m = /^(.*)\.lora_([ab])$/.exec(t.name);
      if (m === null) continue;
      const base = shapes.get(m[1]!);
      if (base === undefined) throw new ModelCheckError(ModelCheckReason.AdapterIncompatible, `adapter ${adapter.path} adapts ${m[1]}, which the model ${modelPath} does not have`);
      const dims = t.dimensions.map(Number);
      // lora_a: [n_in, r]; lora_b: [r, n_out]; the base weight is [n_in, n_out].
      const ok = m[2] === "a" ? dims[0] === base[0] : dims[1] === base[1];
      if (!ok) throw new ModelCheckError(ModelCheckReason.AdapterIncompatible, `adapter ${adapter.path}: ${t.name} is [${dims.join(", ")}] but the model's ${m[1]} is [${base.join(", ")}] (a LoRA for another model size)`);
      if (m[2] === "a") rank ??= dims[1];
    }
    if (rank === undefined) throw new ModelCheckError(ModelCheckReason.AdapterInvalid, `adapter ${adapter.path} holds no LoRA tensors`);
    const format = at(meta, "interlace.prompt.format") === "native" ? "native" : "cml";
    if (format !== callFormat) {
      throw new ModelCheckError(
        ModelCheckReason.AdapterIncompatible,
        format === "native"
          ? `adapter ${adapter.path} was fine-tuned on the model's native tool-call format (npm run finetune -- --format native), not CML: the engine needs a CML adapter (npm run finetune)`
          : `adapter ${adapter.path} was fine-tuned on CML, not the model's native tool-call format`,
      );
    }
    const examples = at(meta, "interlace.prompt.examples");
    const instructions = at(meta, "interlace.prompt.instructions");
    const alpha = at(meta, "adapter.lora.alpha");
    const name = at(meta, "general.name");
    infos.push({
      path: adapter.path,
      scale: adapter.scale,
      architecture: arch,
      rank,
      tensors: tensors.length,
      ...(typeof alpha === "number" ? { alpha } : {}),
      ...(examples === "none" || examples === "builtin" ? { promptExamples: examples } : {}),
      ...(instructions === "full" || instructions === "brief" ? { promptInstructions: instructions } : {}),
      ...(typeof name === "string" ? { name } : {}),
    });
  }
  return { architecture, adapters: infos };
}

/** How to prompt the model: an explicit choice wins, then what the adapters declare, else the defaults (full instructions, built-in examples). */
export function resolvePromptStyle(explicit: { examples?: PromptExamples | undefined; instructions?: PromptInstructions | undefined }, adapters: readonly AdapterInfo[]): PromptStyle {
  return {
    examples: explicit.examples ?? adapters.find((a) => a.promptExamples !== undefined)?.promptExamples ?? DEFAULT_PROMPT_STYLE.examples,
    instructions: explicit.instructions ?? adapters.find((a) => a.promptInstructions !== undefined)?.promptInstructions ?? DEFAULT_PROMPT_STYLE.instructions,
  };
}
