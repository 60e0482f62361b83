/**
 * @module Rendering chat messages through the model's own chat template
 * (node-llama-cpp's resolved chat wrapper) into tokens ready to evaluate.
 * Untrusted content (user and tool text) is tokenized WITHOUT special tokens,
 * so it can never forge a CML marker; trusted content (the system prompt and
 * the model's own output) gets real marker tokens where the model has them.
 */
import {
  ChatMLChatWrapper,
  LlamaText,
  resolveChatWrapper,
  SpecialToken,
  SpecialTokensText,
  type ChatHistoryItem,
  type ChatWrapper,
  type LlamaModel,
  type LlamaTextValue,
  type Token,
} from "node-llama-cpp";
import { CML, CML_MARKERS, type ChatMessage, type CmlMarker } from "../../../common/src/index.js";
import { findMarkerTokens, type MarkerTokenInfo } from "../cml/index.js";

/** A chat message; `tool` messages carry the id of the call they answer. */
export type PromptMessage = ChatMessage & { toolCallId?: string };

/** Assistant output as CML pieces: markers are written by the engine, text and values stay plain. */
export type CmlSegment =
  | { type: "text"; text: string }
  | { type: "call"; id?: string; body: string }
  | { type: "interrupt"; id: string; value: string }
  | { type: "trap" };

export interface RenderOptions {
  /** Leave the last message (an assistant one) open and continue it, instead of opening a new assistant turn. */
  continueAssistant?: boolean;
  /**
   * Partial assistant output appended after the generation prompt (or the
   * continued message): re-entry after a sync call, e.g. the call block and
   * its result interrupt. A string is trusted model output (markers in it
   * become marker tokens); segments keep interrupt values plain.
   */
  assistantPrefix?: string | readonly CmlSegment[];
  /** Roles whose content may contain real markers. Default: system and assistant (never user or tool). */
  markerRoles?: readonly ChatMessage["role"][];
  /** Overrides the model's resolved chat wrapper. */
  chatWrapper?: ChatWrapper;
}

export interface RenderedPrompt {
  tokens: Token[];
  /** The rendered text with special tokens spelled out (logs, debugging). */
  text: string;
  /** Which chat wrapper rendered it. */
  wrapper: string;
}

const modelInfo = new WeakMap<LlamaModel, { markers: MarkerTokenInfo; wrapper: ChatWrapper }>();

function infoFor(model: LlamaModel): { markers: MarkerTokenInfo; wrapper: ChatWrapper } {
  let info = modelInfo.get(model);
  if (info === undefined) {
    // The model's own template (Jinja, or the specialised wrapper it is equivalent to); ChatML if it has none.
    const wrapper = resolveChatWrapper(model, { warningLogs: false }) ?? new ChatMLChatWrapper();
    info = { markers: findMarkerTokens(model), wrapper };
    modelInfo.set(model, info);
  }
  return info;
}

const MARKER_RE = new RegExp(CML_MARKERS.map((m) => m.replace(/[[\]]/g, "\\$&")).join("|"), "g");

/**
 * Untrusted text. Markers the model has as user-defined tokens (which the
 * tokenizer matches even without special tokens) get a zero-width space
 * after their `[` so they tokenize as ordinary text.
 */
export function plainText(text: string, forgeable: readonly CmlMarker[] = []): LlamaTextValue[] {
  if (forgeable.length === 0) return [text];
  return [text.replace(MARKER_RE, (m) => (forgeable.includes(m as CmlMarker) ? `[\u200b${m.slice(1)}` : m))];
}

/**
 * Trusted text: each marker becomes its own token run, tokenized apart from
 * the text around it. Where the model has the marker as a token that is the
 * token; where it is plain text (e.g. Gemma), it is still tokenized on its
 * own, exactly as the engine injects it and as the call grammar makes the
 * model write it (text tokenized as one string would merge `]` and `[`
 * across `[END][TRAP]` into tokens the model never meets while decoding).
 */
export function trustedText(text: string, _markers: MarkerTokenInfo): LlamaTextValue[] {
  const out: LlamaTextValue[] = [];
  let last = 0;
  for (const m of text.matchAll(MARKER_RE)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(new SpecialTokensText(m[0]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** A marker as its own token run (its control token where the model has one; see {@link trustedText}). */
function marker(m: CmlMarker, _markers: MarkerTokenInfo): LlamaTextValue {
  return new SpecialTokensText(m);
}

/** CML segments: markers as tokens, call bodies, text and interrupt values plain. */
export function segmentsText(segments: readonly CmlSegment[], markers: MarkerTokenInfo): LlamaTextValue[] {
  const out: LlamaTextValue[] = [];
  const plain = (s: string) => out.push(...plainText(s, markers.forgeable));
  for (const s of segments) {
    switch (s.type) {
      case "text":
        plain(s.text);
        break;
      case "call":
        out.push(marker(CML.CALL, markers));
        if (s.id !== undefined) {
          plain(s.id);
          out.push(marker(CML.HEAD, markers));
        }
        plain(s.body);
        out.push(marker(CML.END, markers));
        break;
      case "interrupt":
        out.push(marker(CML.INTR, markers));
        plain(s.id);
        out.push(marker(CML.HEAD, markers));
        plain(s.value);
        out.push(marker(CML.END, markers));
        break;
      case "trap":
        out.push(marker(CML.TRAP, markers), marker(CML.END, markers));
        break;
    }
  }
  return out;
}

/** Private-use placeholders that no template alters and no user text contains. */
const placeholder = (i: number): string => `\uE000${i}\uE001`;
const PLACEHOLDER_RE = /\uE000(\d+)\uE001/g;

/**
 * Renders `messages` (plus an open assistant turn, or the continued last
 * assistant message, plus `assistantPrefix`) into tokens. The template sees
 * placeholders; message contents are spliced in afterwards with their own
 * trust level, so the template can never turn user text into special tokens.
 */
export function renderPromptText(
  model: LlamaModel,
  messages: readonly PromptMessage[],
  opts: RenderOptions = {},
): { text: LlamaText; values: LlamaTextValue[]; wrapper: string } {
  const { markers, wrapper: resolved } = infoFor(model);
  const wrapper = opts.chatWrapper ?? resolved;
  const markerRoles = new Set(opts.markerRoles ?? ["system", "assistant"]);
  const contents: LlamaTextValue[][] = [];
  const slot = (values: LlamaTextValue[]): string => {
    contents.push(values);
    return placeholder(contents.length - 1);
  };
  const content = (m: PromptMessage): LlamaTextValue[] => {
    if (m.role === "tool") return segmentsText([{ type: "interrupt", id: m.toolCallId ?? "result", value: m.content }], markers);
    return markerRoles.has(m.role) ? trustedText(m.content, markers) : plainText(m.content, markers.forgeable);
  };
  const history: ChatHistoryItem[] = [];
  const list = [...messages];
  const continued = opts.continueAssistant === true && list.at(-1)?.role === "assistant" ? list.pop() : undefined;
  for (const m of list) {
    const text = slot(content(m));
    if (m.role === "system") history.push({ type: "system", text });
    else if (m.role === "assistant") history.push({ type: "model", response: [text] });
    else history.push({ type: "user", text }); // user, and tool results delivered as interrupt blocks
  }
  const open: LlamaTextValue[] = continued !== undefined ? content(continued) : [];
  const prefix = opts.assistantPrefix;
  if (prefix !== undefined) open.push(...(typeof prefix === "string" ? trustedText(prefix, markers) : segmentsText(prefix, markers)));
  history.push({ type: "model", response: open.length > 0 ? [slot(open)] : [] });

  const { contextText } = wrapper.generateContextState({ chatHistory: history });
  const values: LlamaTextValue[] = [];
  for (const v of contextText.values) {
    if (typeof v !== "string") {
      values.push(v);
      continue;
    }
    let last = 0;
    for (const m of v.matchAll(PLACEHOLDER_RE)) {
      if (m.index > last) values.push(v.slice(last, m.index));
      values.push(...contents[Number(m[1])]!);
      last = m.index + m[0].length;
    }
    if (last < v.length) values.push(v.slice(last));
  }
  return { text: LlamaText(values), values, wrapper: wrapper.wrapperName };
}

/**
 * Tokenizes values one run at a time: plain strings are joined and tokenized
 * together, every special text (template tokens, CML markers) on its own.
 * `LlamaText.tokenize` would first merge adjacent special texts, so
 * `[END][TRAP]` in a text-marker model would become one string whose `][`
 * merges into a token the decode loop never produces.
 */
function tokenizeValues(tokenizer: LlamaModel["tokenizer"], values: readonly LlamaTextValue[], trimFirst: boolean): Token[] {
  const out: Token[] = [];
  let pending = "";
  const flush = (): void => {
    if (pending !== "") out.push(...LlamaText(pending).tokenize(tokenizer, out.length > 0 || trimFirst ? "trimLeadingSpace" : undefined));
    pending = "";
  };
  for (const v of values) {
    if (typeof v === "string") pending += v;
    else if (v instanceof SpecialTokensText || v instanceof SpecialToken) {
      flush();
      out.push(...LlamaText(v).tokenize(tokenizer, out.length > 0 || trimFirst ? "trimLeadingSpace" : undefined));
    }
  }
  flush();
  return out;
}

/** {@link renderPromptText}, tokenized: the tokens to evaluate. */
export function renderPrompt(model: LlamaModel, messages: readonly PromptMessage[], opts: RenderOptions = {}): RenderedPrompt {
  const { values, wrapper } = renderPromptText(model, messages, opts);
  const tokens = tokenizeValues(model.tokenizer, values, false);
  return { tokens, text: model.detokenize(tokens, true), wrapper };
}

/** Tokens of trusted CML (engine- or model-written): markers become marker tokens, as injected mid-stream. */
export function tokenizeCml(model: LlamaModel, segments: readonly CmlSegment[]): Token[] {
  return tokenizeValues(model.tokenizer, segmentsText(segments, infoFor(model).markers), true);
}
