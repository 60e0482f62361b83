/**
 * @module The draft model S (`--draft-model PATH`): a second GGUF loaded
 * beside the main one, on the same llama.cpp instance, with its own small
 * context. It writes a predicted call as real forward passes: the history is
 * prefilled (reusing whatever prefix the draft sequence already holds) and
 * then every token of the call block is evaluated one step at a time. Under
 * the scripted draft policy the tokens are the policy's (the sample is
 * discarded, as for the main model's scripted policy); the time is real.
 */
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { Logger } from "../../../common/src/index.js";

export interface DraftModelOptions {
  modelPath: string;
  /** Concurrent drafts (sequences of the draft context). Default 2. */
  sequences?: number;
  /** Tokens per draft sequence; longer histories keep their tail. Default 2048. */
  contextSize?: number;
  threads?: number;
}

export interface DraftRun {
  /** Tokens evaluated as the history (after the reused prefix). */
  prefilled: number;
  /** Tokens written step by step. */
  decoded: number;
  /** Wall time, ms: the draft's generation time g. */
  ms: number;
}

export class DraftModel {
  private readonly free: LlamaContextSequence[];
  private readonly waiters: ((seq: LlamaContextSequence) => void)[] = [];

  private constructor(
    readonly model: LlamaModel,
    private readonly context: LlamaContext,
    readonly modelPath: string,
  ) {
    this.free = [];
    for (let i = 0; i < context.totalSequences; i++) this.free.push(context.getSequence());
  }

  static async load(llama: Llama, options: DraftModelOptions, log: Logger): Promise<DraftModel> {
    const t0 = performance.now();
    const model = await llama.loadModel({ modelPath: options.modelPath });
    const context = await model.createContext({
      sequences: options.sequences ?? 2,
      contextSize: options.contextSize ?? 2048,
      ...(options.threads !== undefined && options.threads > 0 ? { threads: options.threads } : {}),
      batching: { itemPrioritizationStrategy: "firstInFirstOut" },
      failedCreationRemedy: false,
    });
    log.info({ draftModel: options.modelPath, sequences: context.totalSequences, loadMs: Math.round(performance.now() - t0) }, "draft model loaded");
    return new DraftModel(model, context, options.modelPath);
  }

  get contextSize(): number {
    return this.context.contextSize;
  }

  /** Plain text → draft-model tokens (special tokens not parsed). */
  tokenize(text: string): Token[] {
    return text === "" ? [] : this.model.tokenize(text, false, "trimLeadingSpace");
  }

  /**
   * Writes `output` after `history` with real forward passes: the history is
   * prefilled (its common prefix with what the sequence holds is kept), then
   * each output token is one decode step.
   */
  async run(history: readonly Token[], output: readonly Token[], signal?: AbortSignal): Promise<DraftRun> {
    const t0 = performance.now();
    const seq = await this.acquire();
    try {
      // Keep the room for the output: an over-long history keeps its tail.
      const room = Math.max(1, this.contextSize - output.length - 2);
      const hist = history.length > room ? history.slice(history.length - room) : history.slice();
      const held = seq.contextTokens;
      let p = 0;
      while (p < held.length && p < hist.length && held[p] === hist[p]) p++;
      if (p === hist.length && p > 0) p--; // one history token must be evaluated to produce the next
      if (seq.nextTokenIndex > p) await seq.eraseContextTokenRanges([{ start: p, end: seq.nextTokenIndex }]);
      const suffix = hist.slice(p);
      let decoded = 0;
      if (output.length === 0) {
        if (suffix.length > 0) await seq.evaluateWithoutGeneratingNewTokens(suffix);
      } else {
        const gen = seq.evaluate(suffix.length > 0 ? suffix : [output[0]!], { temperature: 0 });
        try {
          await gen.next();
          decoded++;
          // Each further token is a decode step; the sample is discarded for the scripted token.
          for (let i = suffix.length > 0 ? 0 : 1; i < output.length - 1; i++) {
            if (signal?.aborted === true) break;
            await gen.next(output[i]!);
            decoded++;
          }
        } finally {
          await gen.return();
        }
      }
      return { prefilled: suffix.length, decoded, ms: performance.now() - t0 };
    } finally {
      this.release(seq);
    }
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }

  private acquire(): Promise<LlamaContextSequence> {
    const seq = this.free.pop();
    if (seq !== undefined) return Promise.resolve(seq);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(seq: LlamaContextSequence): void {
    const next = this.waiters.shift();
    if (next !== undefined) next(seq);
    else this.free.push(seq);
  }
}
