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
import { resolveChatWrapper, ChatMLChatWrapper, type ChatHistoryItem, type ChatModelFunctions, type ChatModelResponse, type ChatWrapper, type LlamaModel } from "node-llama-cpp";
import type { ToolSpec } from "../../common/src/index.js";
import type { TrainingTask } from "./build-samples.js";
import { endOfTurnToken, type TokenizedSample } from "./sample-tokens.js";
import { reportSentence, successResult, type Rng } from "./tool-results.js";

/** The functions as node-llama-cpp's chat session documents them to the model. */
export function nativeFunctions(tools: readonly ToolSpec[]): ChatModelFunctions {
  return Object.fromEntries(tools.map((t) => [t.name, { description: t.description, params: t.parameters as never }]));
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
    this.wrapper = resolveChatWrapper(model, { warningLogs: false }) ?? new ChatMLChatWrapper();
    this.endOfTurn = endOfTurnToken(model);
  }

  get wrapperName(): string {
    return this.wrapper.wrapperName;
  }

  private tokens(history: ChatHistoryItem[], functions: ChatModelFunctions): number[] {
    const { contextText } = this.wrapper.generateContextState({ chatHistory: history, availableFunctions: functions, documentFunctionParams: true });
    return contextText.tokenize(this.model.tokenizer);
  }

  /**
   * The task as a conversation in the native format, or undefined when the
   * wrapper's rendering of the prompt is not a prefix of the whole (no exact
   * loss spans; the sample is left out).
   */
  sample(task: TrainingTask, rng: Rng): NativeSample | undefined {
    const functions = nativeFunctions(task.tools);
    const head: ChatHistoryItem[] = task.messages.map((m) => (m.role === "system" ? { type: "system", text: m.content } : { type: "user", text: m.content }));
    const results = task.calls.map((c) => successResult(c, rng));
    const calls = task.calls.map((c, i) => ({ type: "functionCall" as const, name: c.tool, params: c.arguments, result: JSON.parse(results[i]!.value) as unknown }));
    const answer = reportSentence(results.map((r) => r.clause), rng);
    const render = (response: ChatModelResponse["response"]): number[] => this.tokens([...head, { type: "model", response }], functions);
    const full = render([...calls, answer]);
    // Where a rendering of a prefix of the turn ends inside the whole: a token that spans the boundary
    // (the call's closing `)` merged with the newline after it) belongs to the piece it ends.
    const common = (p: readonly number[]): number => {
      let i = 0;
      while (i < p.length && i < full.length && p[i] === full[i]) i++;
      return i;
    };
    const endOf = (p: readonly number[]): number => (common(p) === p.length ? p.length : common(p) + 1);
    const prompt = render([]);
    if (common(prompt) !== prompt.length) return undefined;
    const spans: [number, number][] = [];
    let at = prompt.length;
    for (let k = 0; k < calls.length; k++) {
      // The call as the model writes it (text up to its closing parenthesis), then the runtime's result.
      const callText = this.wrapper.generateFunctionCall(calls[k]!.name, calls[k]!.params).toString();
      const written = endOf(render([...calls.slice(0, k), callText]));
      const answered = Math.max(written, endOf(render(calls.slice(0, k + 1))));
      if (written <= at) return undefined;
      spans.push([at, written]);
      at = answered;
    }
    if (full.length <= at) return undefined;
    spans.push([at, full.length + 1]);
    return {
      messages: task.messages.map((m) => ({ role: m.role === "system" ? "system" : "user", content: m.content })),
      calls: calls.map(({ name, params, result }) => ({ name, params, result })),
      answer,
      tokens: { input_ids: [...full, this.endOfTurn], loss_spans: spans, prompt_tokens: prompt.length },
      meta: { task: task.id, origin: task.origin, sources: task.sources, format: "native", wrapper: this.wrapper.wrapperName },
    };
  }
}
