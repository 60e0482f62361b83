/**
 * @module The engine's options (one schema, parsed once at start-up from flags
 * over environment variables over defaults). The HTTP server's `main.ts`
 * parses them with {@link parseEngineOptions} and hands them to `createEngine`.
 */
import {
  boolOpt,
  enumOpt,
  intOpt,
  optionalStringOpt,
  stringOpt,
  type KvPolicy,
  type Source,
} from "../../../common/src/index.js";
import { RETENTION_POLICIES, type RetentionPolicy } from "../kv/index.js";
import { PROMPT_EXAMPLES, PROMPT_INSTRUCTIONS, type PromptExamples, type PromptInstructions } from "../prompt/index.js";

export type GpuOption = false | "cuda" | "auto";

/** A LoRA adapter (GGUF) applied to the model at context creation. */
export interface AdapterOption {
  path: string;
  /** Multiplies the adapter's effect. Default 1. */
  scale: number;
}

export interface EngineOptions {
  /** Path of the GGUF file to serve. */
  modelPath: string;
  /** `false` (CPU), `"cuda"` or `"auto"`. */
  gpu: GpuOption;
  /** LoRA adapters over the model (e.g. a CML fine-tune, `npm run finetune`). */
  adapters?: readonly AdapterOption[];
  /**
   * Few-shot examples in CML prompts. Absent: what the adapters' metadata
   * says (`interlace.prompt.examples`, written by `npm run finetune`: a model
   * fine-tuned on CML is prompted as it was trained, without examples), else
   * `builtin`.
   */
  promptExamples?: PromptExamples;
  /** How much of CML the system prompt explains; absent: what the adapters say (`interlace.prompt.instructions`), else `full`. */
  promptInstructions?: PromptInstructions;
  /** Parallel sequences in the one context: the most sessions the engine holds at once. */
  sequences: number;
  /** Tokens per sequence (each sequence has its own KV stream of this size). */
  contextSize: number;
  /** Decode threads. 1 on small CPU machines: more threads than cores is catastrophic (docs/engine-facts.md). */
  threads: number;
  /** Pool-wide trap decision override; `auto` asks the KV cost model. */
  kvPolicy: KvPolicy;
  /**
   * Which paused session gives its cells up when a request finds every
   * sequence held (`eta`: the one expected to wait longest; see
   * kv/retention.ts for `ttl`, `lru`, `pin` and `discard`). Default `eta`.
   */
  kvRetention?: RetentionPolicy;
  /** The `ttl` policy's TTL when a request gives no `retentionSeconds`, ms. Default 30 s. */
  kvRetentionTtlMs?: number;
  /** Default generated-token limit of a session or completion. */
  maxTokens: number;
  /** Idle finished sequences kept resident as a prefix cache (LRU, bounded by free sequences). */
  prefixCache: boolean;
  /**
   * Extra sequences that keep apps' shared prefixes (system prompt and tool
   * block) after their sessions end, so saturation does not evict them (0:
   * off). Each costs `contextSize` KV cells. Needs `prefixCache`.
   */
  prefixStore?: number;
  /** Directory for swapped-out sequence state (tmpfs is best). */
  swapDir?: string;
  /**
   * A file that keeps the calibrated KV cost model for this model file,
   * context size, threads and GPU setting: an engine that finds one for its
   * own settings starts without calibrating (a few seconds on CPU), and one
   * that does not calibrates and writes it (absent: calibrate at every start).
   */
  costModelFile?: string;
  /** Move sessions down into freed lower sequence ids so batches stay contiguous (default true). */
  compaction?: boolean;
  /**
   * Most tokens of one session's fill (prompt, re-entry, long injection)
   * evaluated per step; the rest waits for the next steps, so a long prompt
   * never stalls the other sessions' decoding for its whole prefill. 0: no limit.
   * Default 128.
   */
  prefillChunk?: number;
  /**
   * How long a finished Responses API turn keeps its sequence resident for a
   * follow-up naming it (`previous_response_id`), ms (0: off). Default 60 s.
   */
  responseRetentionMs?: number;
  /** Most sequences retained that way at once. Default half the sequences (at least 1). */
  maxRetainedResponses?: number;
}

export const DEFAULT_ENGINE_OPTIONS: Omit<EngineOptions, "modelPath"> = {
  gpu: false,
  sequences: 8,
  contextSize: 2048,
  threads: 1,
  kvPolicy: "auto",
  maxTokens: 512,
  prefixCache: true,
  prefixStore: 0,
  compaction: true,
  prefillChunk: 128,
};

/** Half the sequences, at least one: retained responses never take most of the engine. */
export function defaultRetained(sequences: number): number {
  return Math.max(1, Math.floor(sequences / 2));
}

/** `PATH[@SCALE][,PATH[@SCALE]...]` → adapters (a path may not contain a comma). */
export function parseAdapterList(value: string, flag: string): AdapterOption[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map((item) => {
      const at = item.lastIndexOf("@");
      const path = at > 0 ? item.slice(0, at) : item;
      const scale = at > 0 ? Number(item.slice(at + 1)) : 1;
      if (!Number.isFinite(scale) || scale <= 0 || scale > 4) throw new Error(`--${flag}: the scale of ${path} must be a number in (0, 4], got "${item.slice(at + 1)}"`);
      if (path === "") throw new Error(`--${flag}: an empty adapter path`);
      return { path, scale };
    });
}

/** Reads `--model`, `--adapters`, `--prompt-examples`, `--prompt-instructions`, `--gpu`, `--sequences`, `--context-size`, `--threads`, `--kv-policy`, `--kv-retention`, `--kv-retention-ttl-ms`, `--max-tokens`, `--prefix-cache`, `--prefix-store`, `--compaction`, `--prefill-chunk`, `--swap-dir`, `--kv-cost-model-file`, `--response-retention-ms`, `--max-retained-responses`. */
export function parseEngineOptions(src: Source, defaults: Partial<EngineOptions> = {}): EngineOptions {
  const d = { ...DEFAULT_ENGINE_OPTIONS, ...defaults };
  const gpuRaw = enumOpt(src, "gpu", ["false", "cuda", "auto"] as const, d.gpu === false ? "false" : d.gpu);
  const swapDir = optionalStringOpt(src, "swap-dir") ?? d.swapDir;
  const costModelFile = optionalStringOpt(src, "kv-cost-model-file") ?? d.costModelFile;
  const sequences = intOpt(src, "sequences", d.sequences, { min: 1, max: 256 });
  const adaptersRaw = optionalStringOpt(src, "adapters");
  const adapters = adaptersRaw !== undefined ? parseAdapterList(adaptersRaw, "adapters") : d.adapters;
  const promptExamples = optionalStringOpt(src, "prompt-examples") !== undefined ? enumOpt(src, "prompt-examples", PROMPT_EXAMPLES, "builtin") : d.promptExamples;
  const promptInstructions = optionalStringOpt(src, "prompt-instructions") !== undefined ? enumOpt(src, "prompt-instructions", PROMPT_INSTRUCTIONS, "full") : d.promptInstructions;
  return {
    modelPath: stringOpt(src, "model", defaults.modelPath ?? ""),
    ...(adapters !== undefined && adapters.length > 0 ? { adapters } : {}),
    ...(promptExamples !== undefined ? { promptExamples } : {}),
    ...(promptInstructions !== undefined ? { promptInstructions } : {}),
    gpu: gpuRaw === "false" ? false : gpuRaw,
    sequences,
    contextSize: intOpt(src, "context-size", d.contextSize, { min: 64 }),
    threads: intOpt(src, "threads", d.threads, { min: 0, max: 256 }),
    kvPolicy: enumOpt(src, "kv-policy", ["keep", "swap", "recompute", "auto"] as const, d.kvPolicy),
    kvRetention: enumOpt(src, "kv-retention", RETENTION_POLICIES, d.kvRetention ?? "eta"),
    kvRetentionTtlMs: intOpt(src, "kv-retention-ttl-ms", d.kvRetentionTtlMs ?? 30_000, { min: 0 }),
    maxTokens: intOpt(src, "max-tokens", d.maxTokens, { min: 1 }),
    prefixCache: boolOpt(src, "prefix-cache", d.prefixCache),
    prefixStore: intOpt(src, "prefix-store", d.prefixStore ?? 0, { min: 0, max: 64 }),
    compaction: boolOpt(src, "compaction", d.compaction ?? true),
    prefillChunk: intOpt(src, "prefill-chunk", d.prefillChunk ?? 128, { min: 0 }),
    responseRetentionMs: intOpt(src, "response-retention-ms", d.responseRetentionMs ?? 60_000, { min: 0 }),
    maxRetainedResponses: intOpt(src, "max-retained-responses", d.maxRetainedResponses ?? defaultRetained(sequences), { min: 0, max: 256 }),
    ...(swapDir !== undefined ? { swapDir } : {}),
    ...(costModelFile !== undefined ? { costModelFile } : {}),
  };
}
