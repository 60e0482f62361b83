/**
 * @module The draft model S (`--draft-model PATH`): a second GGUF loaded
 * beside the main one, on the same llama.cpp instance, with its own small
 * context. It writes a predicted call as real forward passes: the history is
 * prefilled (reusing whatever prefix the draft sequence already holds) and
 * then every token of the call block is evaluated one step at a time.
 *
 * Two ways to write it:
 * - {@link DraftModel.run}, under the scripted draft policy: the tokens are
 *   the policy's (the sample is discarded, as for the main model's scripted
 *   policy); the time is real;
 * - {@link DraftModel.sampleCall}, unscripted: the draft samples its own call
 *   block after `[CALL]`, constrained by the session's call grammar (as the
 *   main model's call blocks are, so a small model writes a parseable call),
 *   and the block is read back with the engine's own CML monitor and parser.
 */
import { LlamaGrammarEvaluationState, TokenBias, type Llama, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import { CML, type ChatMessage, type CmlMarker, type Logger, type ToolSpec } from "../../../common/src/index.js";
import { createCallGrammar, createTokenMonitor, findMarkerTokens, INTR_LOGIT, parseCallBody } from "../cml/index.js";
import { StreamDetokenizer } from "../engine/detokenizer.js";
import type { AdapterOption } from "../engine/engine-options.js";
import { checkModel, resolvePromptStyle } from "../engine/model-check.js";
import { cmlPromptMessages, renderPrompt, type CallStyle, type PromptStyle } from "../prompt/index.js";
import { markerTokenIds, tokenizeCml } from "../engine/runtime.js";
import type { PredictedCall } from "./planner.js";

export interface DraftModelOptions {
  modelPath: string;
  /** LoRA adapters over the draft (e.g. a CML fine-tune of a small model). */
  adapters?: readonly AdapterOption[];
  /** Concurrent drafts (sequences of the draft context). Default 2. */
  sequences?: number;
  /** Tokens per draft sequence; longer histories keep their tail. Default 2048. */
  contextSize?: number;
  /** The draft's own CPU threads, added to the Llama's thread budget. Default 1. */
  threads?: number;
}

/** What the draft reads before the session's turn: the client's messages and tools, rendered as its own model would be prompted. */
export interface DraftPrompt {
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[];
  callStyle: CallStyle;
}

export interface DraftRun {
  /** Tokens evaluated as the history (after the reused prefix). */
  prefilled: number;
  /** Tokens written step by step. */
  decoded: number;
  /** Wall time, ms: the draft's generation time g. */
  ms: number;
}

/** What an unscripted draft wrote. */
export interface DraftSample extends DraftRun {
  /** The call it wrote, parsed and validated against the session's tools; undefined when it wrote none. */
  call?: PredictedCall;
  /** The block's text after `[CALL]` (for logs and tests). */
  text: string;
  /** Why no call came out (`max_tokens`, or the parser's message). */
  failure?: string;
}

/** Bounds that keep a drafted call short even for a model that never closes a string. */
const DRAFT_GRAMMAR_BOUNDS = { maxStringLength: 48, maxArrayItems: 4, maxGenericDepth: 2 } as const;

export class DraftModel {
  private readonly free: LlamaContextSequence[];
  private readonly waiters: ((seq: LlamaContextSequence) => void)[] = [];
  /** The draft vocabulary's CML markers (control tokens where it has them). */
  private readonly markerTokens: ReadonlyMap<number, CmlMarker>;
  private readonly markerIds: Readonly<Record<CmlMarker, readonly Token[]>>;
  /** Inside a drafted block no other block may open, and `[INTR]` never appears. */
  private readonly blockBias: TokenBias;

  /** Rendered prompts, per prompt object (a session renders its prompt once). */
  private readonly rendered = new WeakMap<DraftPrompt, Token[]>();

  private constructor(
    readonly model: LlamaModel,
    private readonly context: LlamaContext,
    readonly modelPath: string,
    /** Threads this draft added to its Llama's budget (given back on close). */
    private readonly addedThreads: number,
    /** How the draft is prompted: as its adapter was trained (a CML fine-tune: brief instructions), else the full CML instructions. */
    readonly promptStyle: PromptStyle,
  ) {
    this.free = [];
    for (let i = 0; i < context.totalSequences; i++) this.free.push(context.getSequence());
    this.markerTokens = findMarkerTokens(model).markerTokens;
    this.markerIds = markerTokenIds(model, this.markerTokens);
    this.blockBias = new TokenBias(model.tokenizer);
    for (const [id, marker] of this.markerTokens) if (marker === CML.CALL || marker === CML.TRAP || marker === CML.INTR) this.blockBias.set(id as Token, { logit: INTR_LOGIT });
  }

  static async load(llama: Llama, options: DraftModelOptions, log: Logger): Promise<DraftModel> {
    const t0 = performance.now();
    const threads = options.threads !== undefined && options.threads > 0 ? options.threads : 1;
    // node-llama-cpp shares one thread budget (maxThreads) among every context of a Llama, and the
    // engine sets it to the main model's threads: without threads of its own the draft could only
    // evaluate between the main model's steps, so g would grow with G instead of running beside it.
    const budget = llama.maxThreads > 0 ? threads : 0;
    llama.maxThreads += budget;
    try {
      const check = await checkModel(options.modelPath, options.adapters ?? []);
      const model = await llama.loadModel({ modelPath: options.modelPath });
      const context = await model.createContext({
        sequences: options.sequences ?? 2,
        contextSize: options.contextSize ?? 2048,
        threads,
        batching: { itemPrioritizationStrategy: "firstInFirstOut" },
        failedCreationRemedy: false,
        ...(check.adapters.length > 0 ? { lora: { adapters: check.adapters.map((a) => ({ filePath: a.path, scale: a.scale })) } } : {}),
      });
      log.info({ draftModel: options.modelPath, adapters: check.adapters.map((a) => a.path), sequences: context.totalSequences, threads, loadMs: Math.round(performance.now() - t0) }, "draft model loaded");
      return new DraftModel(model, context, options.modelPath, budget, resolvePromptStyle({}, check.adapters));
    } catch (err) {
      llama.maxThreads -= budget;
      throw err;
    }
  }

  get contextSize(): number {
    return this.context.contextSize;
  }

  /** Plain text → draft-model tokens (special tokens not parsed). */
  tokenize(text: string): Token[] {
    return text === "" ? [] : this.model.tokenize(text, false, "trimLeadingSpace");
  }

  /**
   * The session's context as the draft reads it: CML markers as the draft's
   * own marker tokens, the rest plain text. (A tool output spelling a marker
   * can only mislead the draft, whose calls the main model still decides.)
   */
  tokenizeCml(text: string): Token[] {
    return tokenizeCml(this.model, this.markerIds, text);
  }

  /**
   * The draft's history: the session's prompt through the draft model's own
   * chat template (the CML system prompt in the draft's style, no few-shot
   * examples: the draft writes one call, not a whole turn), then the
   * assistant turn so far as CML.
   */
  historyTokens(prompt: DraftPrompt, assistant: string): Token[] {
    let head = this.rendered.get(prompt);
    if (head === undefined) {
      const messages = cmlPromptMessages({ messages: prompt.messages, tools: prompt.tools, callStyle: prompt.callStyle, instructions: this.promptStyle.instructions, examples: [] });
      head = renderPrompt(this.model, messages).tokens;
      this.rendered.set(prompt, head);
    }
    return [...head, ...this.tokenizeCml(assistant)];
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
      const { suffix } = await this.reusePrefix(seq, history, output.length);
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

  /**
   * Unscripted: after `history` the draft opens a call block and writes its
   * body by greedy sampling under the call grammar of `tools`, at most
   * `maxTokens` tokens. The tokens go through a CML monitor as the main
   * model's do; a complete block is parsed and validated against `tools`.
   */
  async sampleCall(history: readonly Token[], tools: readonly ToolSpec[], opts: { maxTokens: number; signal?: AbortSignal; temperature?: number; seed?: number }): Promise<DraftSample> {
    const t0 = performance.now();
    if (tools.length === 0) return { prefilled: 0, decoded: 0, ms: 0, text: "", failure: "no tools" };
    const grammar = await createCallGrammar(this.model.llama, tools, { markerTokens: this.markerTokens, callId: "none", ...DRAFT_GRAMMAR_BOUNDS });
    const open = this.markerIds[CML.CALL];
    const seq = await this.acquire();
    try {
      const { suffix } = await this.reusePrefix(seq, history, opts.maxTokens + open.length);
      const monitor = createTokenMonitor({ markerTokens: this.markerTokens });
      const detok = new StreamDetokenizer(this.model, this.markerTokens);
      for (const token of open) monitor.push(token, detok.push(token));
      const byName = new Map(tools.map((t) => [t.name, t]));
      const gen = seq.evaluate([...suffix, ...open], {
        temperature: opts.temperature ?? 0,
        ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
        grammarEvaluationState: new LlamaGrammarEvaluationState({ model: this.model, grammar }),
        tokenBias: this.blockBias,
      });
      let decoded = 0;
      let text = "";
      try {
        for (let r = await gen.next(); r.done !== true; r = await gen.next()) {
          decoded++;
          const piece = detok.push(r.value);
          text += piece;
          for (const ev of monitor.push(r.value, piece)) {
            if (ev.type === "malformed") return { prefilled: suffix.length, decoded, ms: performance.now() - t0, text, failure: ev.reason };
            if (ev.type !== "call") continue;
            const parsed = parseCallBody(ev.body, byName);
            const base = { prefilled: suffix.length, decoded, ms: performance.now() - t0, text };
            return parsed.ok ? { ...base, call: { tool: parsed.tool, arguments: parsed.arguments } } : { ...base, failure: parsed.message };
          }
          if (decoded >= opts.maxTokens || opts.signal?.aborted === true || this.model.isEogToken(r.value)) break;
        }
      } finally {
        await gen.return();
      }
      return { prefilled: suffix.length, decoded, ms: performance.now() - t0, text, failure: "max_tokens" };
    } finally {
      this.release(seq);
    }
  }

  /**
   * Keeps the common prefix of what `seq` holds and `history` (its tail when
   * it is too long to leave `room` tokens), erases the rest, and returns the
   * history tokens still to evaluate (at least one: it produces the next token).
   */
  private async reusePrefix(seq: LlamaContextSequence, history: readonly Token[], room: number): Promise<{ suffix: Token[] }> {
    const max = Math.max(1, this.contextSize - room - 2);
    const hist = history.length > max ? history.slice(history.length - max) : history.slice();
    const held = seq.contextTokens;
    let p = 0;
    while (p < held.length && p < hist.length && held[p] === hist[p]) p++;
    if (p === hist.length && p > 0) p--; // one history token must be evaluated to produce the next
    if (seq.nextTokenIndex > p) await seq.eraseContextTokenRanges([{ start: p, end: seq.nextTokenIndex }]);
    return { suffix: hist.slice(p) };
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
    this.model.llama.maxThreads -= this.addedThreads;
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
