/**
 * @module The OpenAI chat-completions wire format and its mapping onto the
 * engine's CompletionRequest / CompletionResult: function tools → ToolSpecs,
 * assistant `tool_calls` → CML call blocks in the assistant's text, `tool`
 * messages → `[INTR] id [HEAD] output [END]` (so a scripted policy and the
 * model both see which results are in), results → `choices[0]`.
 * Extension fields for async-naive clients start with `interlace_`.
 */
import {
  ErrorCode,
  formatCallBlock,
  type ChatMessage,
  type ScriptedPolicySpec,
  type ToolSpec,
} from "../../../common/src/index.js";
import type { CompletionRequest, CompletionResult, TokenLogprob } from "../engine/index.js";
import { HttpError } from "./http-errors.js";
import { answerInstruction, checkToolChoice, optionalNumber, parseAnswerFormat, parseChatLogprobs, parseStop, parseToolChoice, samplingOptions } from "./generation-options.js";
import { CHAT_COMPLETIONS_PARAMETERS, refuseUnsupported } from "./openai-parameters.js";
import { checkCompletionTools } from "./resolve-tools.js";
import { isObject, promptBytes, requireObjectBody, validatePolicy } from "./validate-request.js";

export interface OpenAiToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A parsed `POST /v1/chat/completions` body. */
export interface ChatCompletionInput {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  raw: boolean;
  /** Choices to generate (OpenAI `n`). */
  n: number;
  request: Omit<CompletionRequest, "signal" | "onText">;
}

const bad = (message: string): HttpError => HttpError.of(ErrorCode.BadRequest, message);
/** Most choices one request may ask for: each holds a sequence while it runs. */
const MAX_CHOICES = 8;
const CALL_ID = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `content` as a string: OpenAI allows a string, null, or an array of `{type: "text", text}` parts. */
function contentText(value: unknown, where: string): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    return value
      .map((part, i) => {
        if (isObject(part) && part["type"] === "text" && typeof part["text"] === "string") return part["text"];
        throw bad(`${where}[${i}]: only text content parts are supported`);
      })
      .join("");
  }
  throw bad(`${where} must be a string, null or an array of text parts`);
}

function toolCallsText(value: unknown, where: string): string {
  if (value === undefined || value === null) return "";
  if (!Array.isArray(value)) throw bad(`${where} must be an array`);
  return value
    .map((c, i) => {
      const w = `${where}[${i}]`;
      if (!isObject(c) || !isObject(c["function"])) throw bad(`${w} must be {"id", "type": "function", "function": {"name", "arguments"}}`);
      const id = c["id"];
      if (typeof id !== "string" || !CALL_ID.test(id)) throw bad(`${w}.id must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got ${JSON.stringify(id)}`);
      const fn = c["function"];
      if (typeof fn["name"] !== "string") throw bad(`${w}.function.name must be a string`);
      let args: unknown = {};
      if (typeof fn["arguments"] === "string" && fn["arguments"] !== "") {
        try {
          args = JSON.parse(fn["arguments"]);
        } catch {
          throw HttpError.of(ErrorCode.InvalidJson, `${w}.function.arguments is not valid JSON`);
        }
      } else if (isObject(fn["arguments"])) args = fn["arguments"];
      return formatCallBlock(JSON.stringify({ name: fn["name"], arguments: args }), id);
    })
    .join("");
}

/** OpenAI messages → engine chat messages; a tool result carries the id of the call it answers. */
export function toChatMessages(value: unknown): (ChatMessage & { toolCallId?: string })[] {
  if (!Array.isArray(value) || value.length === 0) throw bad(`"messages" must be a non-empty array`);
  return value.map((m, i): ChatMessage & { toolCallId?: string } => {
    const where = `messages[${i}]`;
    if (!isObject(m)) throw bad(`${where} must be an object`);
    const content = contentText(m["content"], `${where}.content`);
    switch (m["role"]) {
      case "system":
      case "developer":
        return { role: "system", content };
      case "user":
        return { role: "user", content };
      case "assistant":
        return { role: "assistant", content: content + toolCallsText(m["tool_calls"], `${where}.tool_calls`) };
      case "tool": {
        const id = m["tool_call_id"];
        if (typeof id !== "string" || !CALL_ID.test(id)) throw bad(`${where}.tool_call_id must be the id of an earlier tool call`);
        // The prompt renderer writes it as `[INTR] id [HEAD] content [END]`, content as plain text.
        return { role: "tool", content, toolCallId: id };
      }
      default:
        throw bad(`${where}.role must be one of "system", "developer", "user", "assistant", "tool", got ${JSON.stringify(m["role"])}`);
    }
  });
}

/** OpenAI function tools → ToolSpecs (`interlace_estimated_latency_ms` on the function carries the LPT hint). */
export function toToolSpecs(value: unknown): ToolSpec[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw bad(`"tools" must be an array`);
  const specs = value.map((t, i) => {
    if (!isObject(t) || t["type"] !== "function" || !isObject(t["function"])) {
      throw bad(`tools[${i}] must be {"type": "function", "function": {"name", "description", "parameters"}}`);
    }
    const fn = t["function"];
    // Clients send a `$schema` dialect (the Agents SDK: draft-07 from zod); OpenAI ignores it, and so do we.
    const params = isObject(fn["parameters"]) ? Object.fromEntries(Object.entries(fn["parameters"]).filter(([k]) => k !== "$schema")) : (fn["parameters"] ?? { type: "object", properties: {} });
    const spec: Record<string, unknown> = { name: fn["name"], description: fn["description"] ?? "", parameters: params };
    if (fn["interlace_estimated_latency_ms"] !== undefined) spec["estimatedLatencyMs"] = fn["interlace_estimated_latency_ms"];
    return spec;
  });
  return checkCompletionTools(specs);
}

/** Validates a chat-completions body: every parameter is applied or refused (`openai-parameters.ts`). */
export function parseChatCompletion(body: unknown, limits: { maxPromptBytes: number }): ChatCompletionInput {
  const b = requireObjectBody(body);
  refuseUnsupported(b, CHAT_COMPLETIONS_PARAMETERS, "chat completions");
  const messages = toChatMessages(b["messages"]);
  const bytes = promptBytes(messages);
  if (bytes > limits.maxPromptBytes) {
    throw HttpError.of(ErrorCode.PayloadTooLarge, `messages of ${bytes} bytes exceed the limit of ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`);
  }
  const tools = toToolSpecs(b["tools"]);
  const toolChoice = parseToolChoice(b["tool_choice"], "chat");
  checkToolChoice(toolChoice, tools);
  const answerFormat = parseAnswerFormat(b["response_format"], "response_format", "chat");
  const stop = parseStop(b["stop"]);
  const flag = (key: string, fallback = false): boolean => {
    const v = b[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== "boolean") throw bad(`"${key}" must be true or false`);
    return v;
  };
  const request: ChatCompletionInput["request"] = {
    messages: answerFormat !== undefined ? withSystemText(messages, answerInstruction(answerFormat)) : messages,
    // `none`: the model is shown no tools, so it writes no call.
    tools: toolChoice === "none" ? [] : tools,
    ...(toolChoice !== undefined && toolChoice !== "auto" && toolChoice !== "none" ? { toolChoice } : {}),
    ...(flag("parallel_tool_calls", true) ? {} : { maxCalls: 1 }),
    ...(answerFormat !== undefined ? { answerFormat } : {}),
    ...(stop !== undefined ? { stop } : {}),
    ...samplingOptions(b),
  };
  const maxTokens = b["max_completion_tokens"] ?? b["max_tokens"];
  if (maxTokens !== undefined && maxTokens !== null) {
    if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens) || maxTokens < 1) throw bad(`"max_tokens" must be a positive integer`);
    request.maxTokens = maxTokens;
  }
  const temperature = optionalNumber(b, "temperature", (n) => n >= 0 && n <= 2, "a number in 0..2");
  if (temperature !== undefined) request.temperature = temperature;
  const seed = optionalNumber(b, "seed", (n) => Number.isInteger(n) && n >= 0, "a non-negative integer");
  if (seed !== undefined) request.seed = seed;
  const raw = flag("interlace_raw_cml");
  if (raw) request.stopAtCalls = "never";
  if (flag("interlace_continue")) {
    if (messages[messages.length - 1]?.role !== "assistant") throw bad(`"interlace_continue" needs the last message to be the assistant's`);
    request.continueAssistant = true;
  }
  const policy: ScriptedPolicySpec | undefined = validatePolicy(b["interlace_policy"], tools, "interlace_policy");
  if (policy !== undefined) request.policy = policy;
  const streamOptions = b["stream_options"];
  if (streamOptions !== undefined && streamOptions !== null && !isObject(streamOptions)) throw bad(`"stream_options" must be an object`);
  const logprobs = parseChatLogprobs(b);
  if (logprobs !== undefined) {
    if (raw) throw bad(`"logprobs" covers the content tokens: not with interlace_raw_cml`);
    request.logprobs = logprobs;
  }
  const n = optionalNumber(b, "n", (x) => Number.isInteger(x) && x >= 1 && x <= MAX_CHOICES, `an integer in 1..${MAX_CHOICES}`) ?? 1;
  if (n > 1 && (policy !== undefined || raw)) throw bad(`"n" above 1 samples the model's own choices: not with interlace_policy or interlace_raw_cml`);
  return {
    model: typeof b["model"] === "string" ? b["model"] : "interlace",
    stream: flag("stream"),
    includeUsage: isObject(streamOptions) && streamOptions["include_usage"] === true,
    raw,
    n,
    request,
  };
}

/** `text` appended to the system message (one is added first when there is none). */
export function withSystemText<M extends ChatMessage>(messages: M[], text: string): M[] {
  const first = messages[0];
  if (first?.role === "system") return [{ ...first, content: first.content === "" ? text : `${first.content}\n\n${text}` }, ...messages.slice(1)];
  return [{ role: "system", content: text } as M, ...messages];
}

export function openAiFinishReason(reason: CompletionResult["finishReason"]): "stop" | "length" | "tool_calls" {
  return reason === "trap" ? "stop" : reason;
}

/** A token's log-probability as OpenAI writes it (chat's `logprobs.content[]` and Responses' `output_text.logprobs[]` alike). */
export interface OpenAiTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export function openAiLogprobs(entries: readonly TokenLogprob[]): OpenAiTokenLogprob[] {
  return entries.map((e) => ({ token: e.token, logprob: e.logprob, bytes: e.bytes, top_logprobs: e.topLogprobs }));
}

export function openAiToolCalls(result: CompletionResult): OpenAiToolCall[] {
  return result.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
}

/** Usage of a request's choices, as OpenAI counts `n > 1`: the prompt once, the completions summed. */
export function choicesUsage(results: readonly CompletionResult[]): Record<string, number> {
  const prompt = results[0]?.usage.promptTokens ?? 0;
  const completion = results.reduce((sum, r) => sum + r.usage.completionTokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/**
 * The extension block of `n > 1` choices: their prefill summed, and what
 * sharing the prompt saved against prefilling it once per choice.
 */
export function choicesExtension(results: readonly CompletionResult[], scripted: boolean): Record<string, unknown> {
  const prefilled = results.reduce((sum, r) => sum + r.usage.prefilledTokens, 0);
  const prompt = results[0]?.usage.promptTokens ?? 0;
  return {
    finish_reason: results.map((r) => r.finishReason),
    prefilled_tokens: prefilled,
    reused_prefix_tokens: results.reduce((sum, r) => sum + r.usage.reusedPrefixTokens, 0),
    prefill_saved_tokens: results.length * prompt - prefilled,
    scripted,
  };
}

/** Extension block on every response: what the engine did beyond the OpenAI fields. */
export function interlaceExtension(result: CompletionResult, scripted: boolean): Record<string, unknown> {
  return {
    finish_reason: result.finishReason,
    prefilled_tokens: result.usage.prefilledTokens,
    reused_prefix_tokens: result.usage.reusedPrefixTokens,
    scripted,
  };
}
