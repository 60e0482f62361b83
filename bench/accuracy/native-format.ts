/**
 * @module The `native` row of the accuracy bench: the model in its own
 * tool-call format, not CML. The conversation is rendered by node-llama-cpp's
 * chat wrapper for the model, exactly as its chat session renders one with
 * function calls (for Gemma: the functions documented in the system message,
 * `||call: name({...})` answered by `||result: ...`), and a native
 * fine-tune (`npm run finetune -- --format native`) learns that rendering
 * (finetune/src/native-samples.ts). The model generates greedily; each call
 * is parsed from its text when the call closes, as an OpenAI-compatible
 * server's tool parser would, and answered by re-rendering the conversation
 * with the call and its result, then generation goes on. A call that does
 * not parse, or names no tool, counts as invalid and is answered with an
 * error. Same GGUF, adapter, sampling, token budget, tool answers and seeded
 * latencies as the CML rows.
 *
 * No call grammar: calls are parsed from free text, as an OpenAI-compatible
 * server's tool parser parses them (vLLM's, for one), so the row's
 * invalid-call rate is a grammar-off rate, beside the CML rows' grammar-off
 * runs. Parameters follow node-llama-cpp's convention
 * (bench/accuracy/native-functions.ts): every one in schema order, null for
 * one left out, dropped before scoring.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { getLlama, LlamaLogLevel, LlamaText, type ChatHistoryItem, type ChatModelResponse, type ChatWrapper, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import { checkModel } from "../../engine-pod/src/engine/model-check.js";
import { fromNativeParams, nativeChatWrapper, nativeFunctions } from "./native-functions.js";
import type { ModelCall } from "./ast-scorer.js";
import type { AccuracyTask, FormatOutcome } from "./run-task.js";

export interface NativeModelOptions {
  modelPath: string;
  /** A LoRA adapter fine-tuned on the native format (absent: the base model). */
  adapter?: string;
  contextSize: number;
  threads: number;
}

/** The wrapper's call syntax as plain text: `prefix name paramsPrefix {json} suffix`. */
interface CallSyntax {
  prefixes: string[];
  paramsPrefix: string;
  suffix: string;
}

/** A call the model wrote, parsed from its text. */
export interface WrittenCall {
  /** The text before the call (kept in the model's turn). */
  before: string;
  name: string;
  /** The parameters, or undefined when they did not parse as a JSON object. */
  params: Record<string, unknown> | undefined;
}

/**
 * The first complete call in `text`, or undefined while none has closed: the
 * prefix, a name, the params prefix, a JSON object (strings and nesting
 * respected) and the suffix. A call whose parameters are not a JSON object is
 * complete at the suffix, with `params` undefined.
 */
export function parseWrittenCall(text: string, syntax: CallSyntax): WrittenCall | undefined {
  let at = -1;
  let prefix = "";
  for (const p of syntax.prefixes) {
    const i = text.indexOf(p);
    if (i >= 0 && (at < 0 || i < at)) [at, prefix] = [i, p];
  }
  if (at < 0) return undefined;
  const rest = text.slice(at + prefix.length);
  const open = rest.indexOf(syntax.paramsPrefix);
  if (open < 0) return undefined;
  const name = rest.slice(0, open).trim();
  const body = rest.slice(open + syntax.paramsPrefix.length);
  const start = body.search(/\S/);
  if (start < 0) return undefined;
  if (body[start] !== "{") {
    const close = body.indexOf(syntax.suffix);
    return close < 0 ? undefined : { before: text.slice(0, at), name, params: body.slice(0, close).trim() === "" ? {} : undefined };
  }
  let depth = 0;
  let inString = false;
  for (let i = start; i < body.length; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) {
        const after = body.slice(i + 1);
        const close = after.search(/\S/);
        if (close < 0 || !after.startsWith(syntax.suffix, close)) return close < 0 ? undefined : { before: text.slice(0, at), name, params: undefined };
        let params: Record<string, unknown> | undefined;
        try {
          const parsed = JSON.parse(body.slice(start, i + 1)) as unknown;
          params = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
        } catch {
          params = undefined;
        }
        return { before: text.slice(0, at), name, params };
      }
    }
  }
  return undefined;
}

const text = (v: unknown): string => LlamaText(v as never).toString();

export class NativeToolCaller {
  private readonly syntax: CallSyntax;

  private constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    /** One sequence for every task: each generation reuses the prefix the last one left. */
    private readonly sequence: LlamaContextSequence,
    private readonly wrapper: ChatWrapper,
  ) {
    const call = wrapper.settings.functions.call;
    this.syntax = { prefixes: [text(call.prefix), ...(call.prefixAlternateMatches ?? []).map(text)].map((p) => p.trimEnd()), paramsPrefix: text(call.paramsPrefix), suffix: text(call.suffix) };
  }

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
    return new NativeToolCaller(model, context, context.getSequence(), nativeChatWrapper(model));
  }

  /** One task: the model calls the tools it chooses, reads each neutral result, and answers. */
  async run(task: AccuracyTask, o: { maxTokens: number; seed: number; toolOutput: string }): Promise<FormatOutcome> {
    const head: ChatHistoryItem[] = task.messages.map((m) => (m.role === "system" ? { type: "system", text: m.content } : m.role === "user" ? { type: "user", text: m.content } : { type: "model", response: [m.content] }));
    const functions = nativeFunctions(task.tools);
    const response: ChatModelResponse["response"] = [];
    const calls: ModelCall[] = [];
    let invalidCalls = 0;
    let generated = 0;
    let eos = false;
    const t0 = performance.now();
    for (;;) {
      const { contextText } = this.wrapper.generateContextState({ chatHistory: [...head, { type: "model", response: [...response] }], availableFunctions: functions, documentFunctionParams: true });
      const round = await this.generate(contextText.tokenize(this.model.tokenizer), o.maxTokens - generated, o.seed);
      generated += round.tokens;
      if (round.call === undefined) {
        eos = round.eog;
        break;
      }
      const { before, name, params } = round.call;
      if (before.trim() !== "") response.push(before);
      const tool = task.tools.find((t) => t.name === name);
      let result: unknown;
      if (tool === undefined || params === undefined) {
        invalidCalls++;
        result = { error: tool === undefined ? `no function named ${name}` : "the parameters are not a JSON object" };
      } else {
        calls.push({ tool: name, arguments: fromNativeParams(params) });
        await sleep(tool.estimatedLatencyMs ?? 100);
        result = JSON.parse(o.toolOutput) as unknown;
      }
      response.push({ type: "functionCall", name, params: params ?? {}, result });
      if (generated >= o.maxTokens) break;
    }
    return { calls, invalidCalls, latencyMs: performance.now() - t0, tokensGenerated: generated, eos, endReason: eos ? "eos" : "maxTokens" };
  }

  /**
   * Evaluates `tokens` (reusing the prefix already in the sequence) and
   * generates greedily until the end of the turn, a complete call, or
   * `budget` tokens.
   */
  private async generate(tokens: Token[], budget: number, seed: number): Promise<{ tokens: number; eog: boolean; call?: WrittenCall }> {
    const seq = this.sequence;
    const held = seq.contextTokens;
    let common = 0;
    while (common < held.length && common < tokens.length - 1 && held[common] === tokens[common]) common++;
    if (common < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: common, end: seq.nextTokenIndex }]);
    const out: Token[] = [];
    if (budget <= 0) return { tokens: 0, eog: false };
    const gen = seq.evaluate(tokens.slice(common), { temperature: 0, seed, yieldEogToken: true });
    try {
      for await (const token of gen) {
        if (this.model.isEogToken(token)) return { tokens: out.length + 1, eog: true };
        out.push(token);
        const call = parseWrittenCall(this.model.detokenize(out), this.syntax);
        if (call !== undefined) return { tokens: out.length, eog: false, call };
        if (out.length >= budget) return { tokens: out.length, eog: false };
      }
    } finally {
      await gen.return();
    }
    return { tokens: out.length, eog: false };
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }
}
