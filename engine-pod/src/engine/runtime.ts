/**
 * @module The model runtime on node-llama-cpp: one Llama instance, one model,
 * ONE context holding N parallel sequences (one KV stream each), and the
 * tokenizer helpers the decode loop needs (CML marker ids, plain-text
 * tokenization that can never produce a marker, the `[INTR]` ban).
 */
import { getLlama, LlamaLogLevel, type Llama, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token, type TokenBias } from "node-llama-cpp";
import { CML, CML_MARKERS, type CmlMarker, type Logger } from "../../../common/src/index.js";
import { createIntrTokenBias, findMarkerTokens } from "../cml/index.js";
import type { PromptStyle } from "../prompt/index.js";
import type { EngineOptions } from "./engine-options.js";
import { checkModel, resolvePromptStyle, type AdapterInfo } from "./model-check.js";

export interface Runtime {
  readonly llama: Llama;
  readonly model: LlamaModel;
  readonly context: LlamaContext;
  /** The session slots of the context, index = sequence id (slot). */
  readonly sequences: readonly LlamaContextSequence[];
  /** The prefix-store sequences, after the session slots (ids `sequences.length`…): never a session's, only forked from. */
  readonly prefixStore: readonly LlamaContextSequence[];
  /** Tokens per sequence. */
  readonly contextSize: number;
  /** The LoRA adapters applied to the context, as their files describe them. */
  readonly adapters: readonly AdapterInfo[];
  /** How CML prompts are written for this model (an adapter is prompted as it was trained). */
  readonly promptStyle: PromptStyle;
  /** Markers that are single control tokens in this vocabulary (id → marker). */
  readonly markerTokens: ReadonlyMap<number, CmlMarker>;
  /** The marker's token(s): one control token in generated models, several text tokens otherwise. */
  readonly markerIds: Readonly<Record<CmlMarker, readonly Token[]>>;
  /** Bias that bans a model-emitted `[INTR]` (a large negative logit, never "never": see docs/engine-facts.md). */
  readonly intrBias: TokenBias;
  /** Plain text → tokens; special tokens are NOT parsed, so text can never forge a marker. */
  tokenizeText(text: string): Token[];
  /** CML text (markers included) → tokens, markers as their control tokens. For engine- or policy-authored text only. */
  tokenizeCml(text: string): Token[];
  isEog(token: Token): boolean;
  close(): Promise<void>;
}

/**
 * Loads the GGUF and creates the context with `options.sequences` session
 * sequences and `options.prefixStore` store sequences after them, with the
 * LoRA adapters applied (checked from their headers first: a wrong adapter
 * is a {@link ModelCheckError} naming it, not a failure inside llama.cpp).
 */
export async function loadRuntime(options: EngineOptions, log: Logger): Promise<Runtime> {
  const t0 = performance.now();
  const check = await checkModel(options.modelPath, options.adapters ?? []);
  const llama = await getLlama({
    gpu: options.gpu,
    build: "never",
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
    ...(options.threads > 0 ? { maxThreads: options.threads } : {}),
  });
  const model = await llama.loadModel({ modelPath: options.modelPath });
  const context = await model.createContext({
    sequences: options.sequences + (options.prefixStore ?? 0),
    contextSize: options.contextSize,
    threads: options.threads,
    batching: { itemPrioritizationStrategy: "firstInFirstOut" },
    failedCreationRemedy: false,
    ...(check.adapters.length > 0 ? { lora: { adapters: check.adapters.map((a) => ({ filePath: a.path, scale: a.scale })) } } : {}),
  });
  const promptStyle = resolvePromptStyle({ examples: options.promptExamples, instructions: options.promptInstructions }, check.adapters);
  const sequences: LlamaContextSequence[] = [];
  // getSequence hands out ids 0..N-1 in order; the slot allocator keeps active ones low.
  for (let i = 0; i < options.sequences; i++) sequences.push(context.getSequence());
  const prefixStore: LlamaContextSequence[] = [];
  for (let i = 0; i < (options.prefixStore ?? 0); i++) prefixStore.push(context.getSequence());

  const { markerTokens } = findMarkerTokens(model);
  const markerIds = markerTokenIds(model, markerTokens);
  // With text markers no single token can be banned; the monitor reports a spelled-out [INTR] as malformed.
  const intrBias = createIntrTokenBias(model, markerTokens);

  log.info(
    {
      modelPath: options.modelPath,
      sequences: options.sequences,
      prefixStore: prefixStore.length,
      contextSize: context.contextSize,
      threads: options.threads,
      gpu: llama.gpu,
      controlMarkers: markerTokens.size,
      adapters: check.adapters.map((a) => ({ path: a.path, scale: a.scale, rank: a.rank })),
      promptStyle,
      loadMs: Math.round(performance.now() - t0),
    },
    "model loaded",
  );

  return {
    llama,
    model,
    context,
    sequences,
    prefixStore,
    contextSize: context.contextSize,
    adapters: check.adapters,
    promptStyle,
    markerTokens,
    markerIds,
    intrBias,
    tokenizeText: (text) => (text === "" ? [] : model.tokenize(text, false, "trimLeadingSpace")),
    tokenizeCml: (text) => tokenizeCml(model, markerIds, text),
    isEog: (token) => model.isEogToken(token),
    async close() {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

/** Each marker's token(s): its control token where the vocabulary has one, else its text tokens. */
export function markerTokenIds(model: LlamaModel, markerTokens: ReadonlyMap<number, CmlMarker>): Record<CmlMarker, Token[]> {
  const markerIds = {} as Record<CmlMarker, Token[]>;
  for (const marker of CML_MARKERS) {
    const id = [...markerTokens].find(([, m]) => m === marker)?.[0];
    markerIds[marker] = id !== undefined ? [id as Token] : model.tokenize(marker, false, "trimLeadingSpace");
  }
  return markerIds;
}

/**
 * Splits `text` at CML markers: markers become their ids, the rest is plain
 * text (never parsed for special tokens), each piece tokenized without the
 * SPM leading space.
 */
export function tokenizeCml(model: LlamaModel, markerIds: Readonly<Record<CmlMarker, readonly Token[]>>, text: string): Token[] {
  const out: Token[] = [];
  const re = /\[(CALL|INTR|TRAP|END|HEAD)\]/g;
  let last = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m.index > last) out.push(...model.tokenize(text.slice(last, m.index), false, "trimLeadingSpace"));
    out.push(...markerIds[m[0] as CmlMarker]);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(...model.tokenize(text.slice(last), false, "trimLeadingSpace"));
  return out;
}

/**
 * An interrupt block as the engine injects it: the marker tokens around the
 * id and the value, both tokenized as plain text (a value can never forge a
 * marker). Re-entry, continuation and fine-tuning data build it the same way.
 */
export function interruptBlockTokens(
  markerIds: Readonly<Record<CmlMarker, readonly Token[]>>,
  tokenizeText: (text: string) => Token[],
  id: string,
  value: string,
): Token[] {
  return [...markerIds[CML.INTR], ...tokenizeText(id), ...markerIds[CML.HEAD], ...tokenizeText(value), ...markerIds[CML.END]];
}
