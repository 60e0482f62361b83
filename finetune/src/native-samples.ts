/**
 * @module Training samples in the model's own tool-call format instead of
 * CML: the format node-llama-cpp's chat wrapper for the model defines (for
 * Gemma, its system message documenting the functions and
 * `||call: name({...})` followed by `||result: ...`), rendered by that
 * wrapper exactly as `LlamaChatSession` renders a conversation with function
 * calls. The same tasks and simulated results as the CML samples, in sync
 * shape (the format has no interrupts: a call, its result, the next call),
 * so a model fine-tuned on each format can be compared on the same tasks.
 * The loss covers the calls the model writes, its final text and the end of
 * its turn; the results are the runtime's.
 */
import { LlamaText, SpecialToken, type ChatHistoryItem, type ChatModelResponse, type ChatWrapper, type LlamaModel } from "node-llama-cpp";
import type { TrainingTask } from "./build-samples.js";
import { nativeChatWrapper, nativeFunctions, toNativeParams } from "../../bench/accuracy/native-functions.js";
import { endOfTurnToken, type TokenizedSample } from "./sample-tokens.js";
import { reportSentence, successResult, type Rng } from "./tool-results.js";

/** A call's arguments in the native form, for the task's tool of that name. */
function nativeArgs(task: TrainingTask, tool: string, args: Record<string, unknown>): Record<string, unknown> {
  const spec = task.tools.find((t) => t.name === tool);
  return spec === undefined ? args : toNativeParams(spec, args);
}

export interface NativeSample {
  messages: { role: "system" | "user"; content: string }[];
  calls: { name: string; params: Record<string, unknown>; result: unknown }[];
  answer: string;
  tokens: TokenizedSample;
  meta: Record<string, unknown>;
}

export class NativeSampleTokenizer {
  private readonly wrapper: ChatWrapper;
  private readonly endOfTurn: number;

  constructor(private readonly model: LlamaModel) {
    this.wrapper = nativeChatWrapper(model);
    this.endOfTurn = endOfTurnToken(model);
  }

  /** The text a function result starts with, in this wrapper's format. */
  private get resultPrefix(): string {
    const prefix = this.wrapper.settings.functions.result.prefix;
    return LlamaText(prefix).values.filter((v): v is string => typeof v === "string").join("");
  }

  get wrapperName(): string {
    return this.wrapper.wrapperName;
  }

  /**
   * The task as a conversation in the native format, with the loss on what
   * the model writes: the call blocks (prefix, name, parameters, closing) and
   * the final text. The rendered context is tokenized the way
   * `LlamaText.tokenize` does it (runs of text between special segments), so
   * each run can be attributed: a run that is a function result, and the
   * special segment that closes it, are the runtime's. Undefined when the
   * walk does not reproduce the wrapper's own tokenization (the sample is
   * left out).
   */
  sample(task: TrainingTask, rng: Rng): NativeSample | undefined {
    const functions = nativeFunctions(task.tools);
    const head: ChatHistoryItem[] = task.messages.map((m) => (m.role === "system" ? { type: "system", text: m.content } : { type: "user", text: m.content }));
    const results = task.calls.map((c) => successResult(c, rng));
    const calls = task.calls.map((c, i) => ({ type: "functionCall" as const, name: c.tool, params: nativeArgs(task, c.tool, c.arguments), result: JSON.parse(results[i]!.value) as unknown }));
    const answer = reportSentence(results.map((r) => r.clause), rng);
    const context = (response: ChatModelResponse["response"]): LlamaText =>
      this.wrapper.generateContextState({ chatHistory: [...head, { type: "model", response }], availableFunctions: functions, documentFunctionParams: true }).contextText;
    const fullText = context([...calls, answer]);
    const full = fullText.tokenize(this.model.tokenizer);
    const promptTokens = context([]).tokenize(this.model.tokenizer);
    const walked = this.walk(fullText);
    if (walked.tokens.length !== full.length || walked.tokens.some((t, i) => t !== full[i])) return undefined;
    if (promptTokens.some((t, i) => t !== full[i])) return undefined;
    const spans: [number, number][] = [];
    for (const [a, b] of walked.modelSpans) {
      const from = Math.max(a, promptTokens.length);
      if (b <= from) continue;
      const last = spans[spans.length - 1];
      if (last !== undefined && last[1] === from) last[1] = b;
      else spans.push([from, b]);
    }
    if (spans.length === 0) return undefined;
    // The end of the turn (appended after the rendering) is the model's too.
    spans[spans.length - 1]![1] = full.length + 1;
    return {
      messages: task.messages.map((m) => ({ role: m.role === "system" ? "system" : "user", content: m.content })),
      calls: calls.map(({ name, params, result }) => ({ name, params, result })),
      answer,
      tokens: { input_ids: [...full, this.endOfTurn], loss_spans: spans, prompt_tokens: promptTokens.length },
      meta: { task: task.id, origin: task.origin, sources: task.sources, format: "native", wrapper: this.wrapper.wrapperName },
    };
  }

  /**
   * Tokenizes a rendered context as `LlamaText.tokenize` does and marks the
   * model's pieces: everything except a run of text that starts with the
   * function result prefix and the special segment right after it.
   */
  private walk(text: LlamaText): { tokens: number[]; modelSpans: [number, number][] } {
    const tokenizer = this.model.tokenizer;
    const tokens: number[] = [];
    const modelSpans: [number, number][] = [];
    let run = "";
    let afterResult = false;
    const push = (piece: readonly number[], model: boolean): void => {
      const at = tokens.length;
      tokens.push(...piece);
      if (model && piece.length > 0) modelSpans.push([at, tokens.length]);
    };
    const flush = (): void => {
      if (run === "") return;
      const isResult = run.startsWith(this.resultPrefix);
      push(tokenizer(run, false, tokens.length > 0 ? "trimLeadingSpace" : undefined), !isResult);
      afterResult = isResult;
      run = "";
    };
    for (const value of text.values) {
      if (typeof value === "string") {
        run += value;
        continue;
      }
      flush();
      const piece = value instanceof SpecialToken ? value.tokenize(tokenizer) : value.tokenize(tokenizer, tokens.length > 0);
      push(piece, !afterResult);
      afterResult = false;
    }
    flush();
    return { tokens, modelSpans };
  }
}
