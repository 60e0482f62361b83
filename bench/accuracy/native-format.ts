/**
 * @module The `native` row of the accuracy bench: the model in its own
 * tool-call format, not CML. node-llama-cpp's chat session runs the task
 * with its chat wrapper's function calling (for Gemma, the functions
 * documented in the system message and `||call: name({...})` answered by
 * `||result: ...`), on the same GGUF, adapter scale, sampling and token
 * budget as the CML rows; a native fine-tune (`npm run finetune -- --format
 * native`) learns exactly this rendering (finetune/src/native-samples.ts).
 * The session calls the functions one after another and feeds each result
 * back, as a sync client would; tools answer the same neutral output after
 * the same seeded latency as the CML rows. node-llama-cpp constrains every
 * call with its own grammar, so no call can be rejected (invalid calls:
 * n/a), and writes every parameter: nulls are omitted parameters
 * (finetune/src/native-functions.ts).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { defineChatSessionFunction, getLlama, LlamaChatSession, LlamaLogLevel, type ChatHistoryItem, type ChatSessionModelFunctions, type LlamaContext, type LlamaContextSequence, type LlamaModel } from "node-llama-cpp";
import { checkModel } from "../../engine-pod/src/engine/model-check.js";
import { fromNativeParams, nativeFunctions } from "../../finetune/src/native-functions.js";
import type { ModelCall } from "./ast-scorer.js";
import type { AccuracyTask, FormatOutcome } from "./run-task.js";

export interface NativeModelOptions {
  modelPath: string;
  /** A LoRA adapter fine-tuned on the native format (absent: the base model). */
  adapter?: string;
  contextSize: number;
  threads: number;
}

export class NativeToolCaller {
  private constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    /** One sequence for every task: a new session on it reuses the prompt prefix the last one left. */
    private readonly sequence: LlamaContextSequence,
  ) {}

  static async load(o: NativeModelOptions): Promise<NativeToolCaller> {
    const check = await checkModel(o.modelPath, o.adapter !== undefined ? [{ path: o.adapter, scale: 1 }] : [], "native");
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false, maxThreads: o.threads });
    const model = await llama.loadModel({ modelPath: o.modelPath });
    const context = await model.createContext({
      sequences: 1,
      contextSize: o.contextSize,
      threads: o.threads,
      failedCreationRemedy: false,
      ...(check.adapters.length > 0 ? { lora: { adapters: check.adapters.map((a) => ({ filePath: a.path, scale: a.scale })) } } : {}),
    });
    return new NativeToolCaller(model, context, context.getSequence());
  }

  /** One task: the model calls the tools it chooses, reads each neutral result, and answers. */
  async run(task: AccuracyTask, o: { maxTokens: number; seed: number; toolOutput: string }): Promise<FormatOutcome> {
    const last = task.messages[task.messages.length - 1];
    if (last === undefined || last.role !== "user") throw new Error(`${task.id}/native: the task does not end with a user message`);
    const history: ChatHistoryItem[] = task.messages.slice(0, -1).map((m) => (m.role === "system" ? { type: "system", text: m.content } : m.role === "user" ? { type: "user", text: m.content } : { type: "model", response: [m.content] }));
    const calls: ModelCall[] = [];
    const documented = nativeFunctions(task.tools);
    const functions: ChatSessionModelFunctions = Object.fromEntries(
      task.tools.map((t) => [
        t.name,
        defineChatSessionFunction({
          description: documented[t.name]!.description!,
          params: documented[t.name]!.params as never,
          handler: async (params: unknown) => {
            calls.push({ tool: t.name, arguments: fromNativeParams(params) });
            await sleep(t.estimatedLatencyMs ?? 100);
            return JSON.parse(o.toolOutput) as unknown;
          },
        }),
      ]),
    );
    const sequence = this.sequence;
    const session = new LlamaChatSession({ contextSequence: sequence, autoDisposeSequence: false });
    try {
      session.setChatHistory(history);
      const before = sequence.tokenMeter.usedOutputTokens;
      const t0 = performance.now();
      // The budget covers the whole turn, calls included. node-llama-cpp's own maxTokens is per
      // generation and 0 means unlimited once a call used it up, so the budget is kept here.
      const budget = new AbortController();
      let generated = 0;
      const out = await session.promptWithMeta(last.content, {
        functions,
        documentFunctionParams: true,
        maxTokens: o.maxTokens,
        temperature: 0,
        seed: o.seed,
        signal: budget.signal,
        stopOnAbortSignal: true,
        onToken: (tokens) => {
          generated += tokens.length;
          if (generated >= o.maxTokens) budget.abort();
        },
      });
      const latencyMs = performance.now() - t0;
      const eos = !budget.signal.aborted && (out.stopReason === "eogToken" || out.stopReason === "stopGenerationTrigger");
      return { calls, invalidCalls: null, latencyMs, tokensGenerated: sequence.tokenMeter.usedOutputTokens - before, eos, endReason: budget.signal.aborted ? "maxTokens" : out.stopReason };
    } finally {
      session.dispose();
    }
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }
}
