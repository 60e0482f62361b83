/**
 * @module Training samples as the target model's tokens, produced by the
 * engine's own code so training sees exactly what serving does: the prompt
 * through the model's chat template (`renderPrompt`), the model's spans as
 * the engine tokenizes CML (markers apart from the text around them),
 * interrupts as the engine injects them, and the end-of-turn token. The loss
 * covers what the model writes (calls, traps, text, end of turn) and nothing
 * the engine injects or the prompt holds.
 */
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import type { CmlMarker } from "../../common/src/index.js";
import { findMarkerTokens } from "../../engine-pod/src/cml/index.js";
import { interruptBlockTokens, markerTokenIds, tokenizeCml } from "../../engine-pod/src/engine/runtime.js";
import { renderPrompt } from "../../engine-pod/src/prompt/index.js";
import type { FinetuneSample } from "./build-samples.js";

export interface TokenizedSample {
  input_ids: number[];
  /** Half-open [start, end) token ranges the loss is taken on. */
  loss_spans: [number, number][];
  prompt_tokens: number;
}

export class SampleTokenizer {
  private constructor(
    private readonly llama: Llama,
    readonly model: LlamaModel,
    private readonly markerIds: Readonly<Record<CmlMarker, readonly Token[]>>,
    readonly endOfTurn: Token,
  ) {}

  /** Loads only the vocabulary of the GGUF at `modelPath`. */
  static async load(modelPath: string): Promise<SampleTokenizer> {
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false });
    const model = await llama.loadModel({ modelPath, vocabOnly: true });
    const markerIds = markerTokenIds(model, findMarkerTokens(model).markerTokens);
    return new SampleTokenizer(llama, model, markerIds, endOfTurnToken(model));
  }

  /** Tokens of model-written CML text (the simulation's clock). */
  countTokens = (text: string): number => tokenizeCml(this.model, this.markerIds, text).length;

  tokenize(sample: FinetuneSample): TokenizedSample {
    const prompt = renderPrompt(this.model, sample.messages.filter((m) => m.role !== "assistant")).tokens;
    const ids: number[] = [...prompt];
    const spans: [number, number][] = [];
    const model = (tokens: readonly Token[]): void => {
      if (tokens.length === 0) return;
      const last = spans.at(-1);
      if (last !== undefined && last[1] === ids.length) last[1] += tokens.length;
      else spans.push([ids.length, ids.length + tokens.length]);
      ids.push(...tokens);
    };
    for (const s of sample.segments) {
      if (s.by === "engine") ids.push(...interruptBlockTokens(this.markerIds, (t) => this.tokenizeText(t), s.id, interruptValue(s.text)));
      else model(tokenizeCml(this.model, this.markerIds, s.text));
    }
    model([this.endOfTurn]);
    return { input_ids: ids, loss_spans: spans, prompt_tokens: prompt.length };
  }

  private tokenizeText(text: string): Token[] {
    return text === "" ? [] : this.model.tokenize(text, false, "trimLeadingSpace");
  }

  async close(): Promise<void> {
    await this.model.dispose();
    await this.llama.dispose();
  }
}

/** The value of an `[INTR]id[HEAD]value[END]` block. */
function interruptValue(block: string): string {
  const head = block.indexOf("[HEAD]");
  return block.slice(head + "[HEAD]".length, block.length - "[END]".length);
}

/**
 * The token that ends an assistant turn in the model's chat template: the
 * first end-of-generation token the template puts after a closed assistant
 * message (`<end_of_turn>` for Gemma, `<|im_end|>` for ChatML, `<|eot_id|>`
 * for Llama 3).
 */
export function endOfTurnToken(model: LlamaModel): Token {
  const marker = "\uE002";
  const rendered = renderPrompt(model, [
    { role: "user", content: "a" },
    { role: "assistant", content: marker },
  ]);
  const text = rendered.tokens;
  const markerTokens = model.tokenize(marker, false, "trimLeadingSpace");
  // Find the marker's tokens, then the first end-of-generation token after them.
  for (let i = 0; i + markerTokens.length <= text.length; i++) {
    if (markerTokens.every((t, j) => text[i + j] === t)) {
      for (let k = i + markerTokens.length; k < text.length; k++) if (model.isEogToken(text[k]!)) return text[k]!;
    }
  }
  const eos = model.tokens.eos;
  if (eos === null) throw new Error("the model's chat template closes no turn with an end-of-generation token, and it has no EOS token");
  return eos;
}
