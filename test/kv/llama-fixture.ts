/**
 * @module Shared set-up for the KV tests: real llama.cpp (CPU, one thread) on
 * the generated `test` model, one context with a few sequences, and greedy
 * decoding helpers.
 */
import { getLlama, LlamaLogLevel, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import { ensureModel } from "../../engine-pod/src/model/index.js";

export interface LlamaFixture {
  model: LlamaModel;
  context: LlamaContext;
  close(): Promise<void>;
}

/** Loads the `test` preset into a context of `sequences` sequences × `contextSize` tokens. */
export async function loadTestModel(options: { sequences?: number; contextSize?: number } = {}): Promise<LlamaFixture> {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const modelPath = await ensureModel({ preset: "test", seed: 1 });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({
    contextSize: options.contextSize ?? 1024,
    sequences: options.sequences ?? 3,
    threads: 1,
  });
  return {
    model,
    context,
    async close() {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

/** `count` tokens of ordinary text (the tokenizer of the generated model). */
export function textTokens(model: LlamaModel, count: number, text = "Tools run while the model keeps decoding. "): Token[] {
  const out: Token[] = [];
  while (out.length < count) out.push(...model.tokenize(text));
  return out.slice(0, count);
}

/**
 * Evaluates `input` and greedily generates `count` tokens. The last returned
 * token is sampled but not yet evaluated (as after any generator stop): pass
 * it first when continuing.
 */
export async function greedy(sequence: LlamaContextSequence, input: readonly Token[], count: number): Promise<Token[]> {
  const out: Token[] = [];
  if (count <= 0) return out;
  for await (const token of sequence.evaluate(input.slice())) {
    out.push(token);
    if (out.length >= count) break;
  }
  return out;
}
