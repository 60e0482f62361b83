/**
 * @module The OpenAI Responses API wire format (`POST /v1/responses`) and its
 * mapping onto the engine's CompletionRequest / CompletionResult: input items
 * (messages, `function_call`, `function_call_output`) → the same conversation
 * the chat-completions endpoint builds (assistant calls as CML call blocks,
 * tool results with the id they answer); flat function tools → ToolSpecs;
 * results → `message` and `function_call` output items and the `response`
 * object. Only what the engine can honour is accepted; the rest is a 400
 * naming the field.
 */
import { randomUUID } from "node:crypto";
import {
  ErrorCode,
  formatCallBlock,
  type ChatMessage,
  type ScriptedPolicySpec,
  type ToolSpec,
} from "../../../common/src/index.js";
import type { CompletionResult } from "../engine/index.js";
import { HttpError } from "./http-errors.js";
import { checkToolChoice, optionalNumber, parseAnswerFormat, parseResponsesLogprobs, parseToolChoice, samplingOptions, type GenerationOptions } from "./generation-options.js";
import { interlaceExtension, openAiLogprobs, toToolSpecs, type OpenAiTokenLogprob } from "./openai.js";
import { RESPONSES_PARAMETERS, refuseUnsupported } from "./openai-parameters.js";
import { isObject, promptBytes, requireObjectBody, validatePolicy } from "./validate-request.js";

/** A conversation message; a tool result carries the id of the call it answers. */
export type ConversationMessage = ChatMessage & { toolCallId?: string };

/** A parsed `POST /v1/responses` body. */
export interface ResponsesInput {
  model: string;
  stream: boolean;
  /** `store: false`: the response is neither kept nor continuable. */
  store: boolean;
  previousResponseId?: string;
  /** `instructions` (the system message); absent: none. */
  instructions?: string;
  /** The new input items as conversation messages. */
  input: ConversationMessage[];
  /** The same items as OpenAI lists them back, each with an id. */
  inputItems: Record<string, unknown>[];
  tools: ToolSpec[];
  /** The tools as sent (echoed on the response object). */
  toolsEcho: unknown[];
  /** `tool_choice` and `text.format` as sent (echoed on the response object). */
  toolChoiceEcho: unknown;
  formatEcho: unknown;
  parallelToolCalls: boolean;
  maxToolCalls?: number;
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  /** The engine fields of `tool_choice`, `parallel_tool_calls`, `max_tool_calls`, `text.format`, `top_p`, `include` and `top_logprobs`. */
  generation: GenerationOptions;
  metadata: Record<string, unknown>;
  policy?: ScriptedPolicySpec;
}

const bad = (message: string): HttpError => HttpError.of(ErrorCode.BadRequest, message);
const CALL_ID = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Text of a message's `content`: a string or `input_text`/`output_text` parts. */
function contentText(value: unknown, where: string): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    return value
      .map((part, i) => {
        if (isObject(part) && (part["type"] === "input_text" || part["type"] === "output_text" || part["type"] === "text") && typeof part["text"] === "string") return part["text"];
        throw bad(`${where}[${i}]: only input_text and output_text content parts are supported`);
      })
      .join("");
  }
  throw bad(`${where} must be a string or an array of input_text parts`);
}

/** A `function_call_output`'s `output`: a string or `input_text` parts. */
function outputText(value: unknown, where: string): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return contentText(value, where);
  throw bad(`${where} must be a string or an array of input_text parts`);
}

function callId(value: unknown, where: string): string {
  if (typeof value !== "string" || !CALL_ID.test(value)) throw bad(`${where} must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got ${JSON.stringify(value)}`);
  return value;
}

/** Input items → conversation messages (consecutive assistant text and calls form one assistant turn). */
export function toConversation(value: unknown): ConversationMessage[] {
  if (typeof value === "string") {
    if (value === "") throw bad(`"input" must not be empty`);
    return [{ role: "user", content: value }];
  }
  if (!Array.isArray(value) || value.length === 0) throw bad(`"input" must be a non-empty string or a non-empty array of input items`);
  const out: ConversationMessage[] = [];
  const assistant = (): ConversationMessage => {
    const last = out.at(-1);
    if (last?.role === "assistant") return last;
    const m: ConversationMessage = { role: "assistant", content: "" };
    out.push(m);
    return m;
  };
  value.forEach((item, i) => {
    const where = `input[${i}]`;
    if (!isObject(item)) throw bad(`${where} must be an object`);
    // An item without `type` but with a `role` is a message (as the Agents SDK sends user input).
    const type: unknown = item["type"] ?? (typeof item["role"] === "string" ? "message" : undefined);
    switch (type) {
      case "message": {
        const content = contentText(item["content"], `${where}.content`);
        switch (item["role"]) {
          case "system":
          case "developer":
            out.push({ role: "system", content });
            return;
          case "user":
            out.push({ role: "user", content });
            return;
          case "assistant":
            assistant().content += content;
            return;
          default:
            throw bad(`${where}.role must be one of "system", "developer", "user", "assistant", got ${JSON.stringify(item["role"])}`);
        }
      }
      case "function_call": {
        const id = callId(item["call_id"], `${where}.call_id`);
        if (typeof item["name"] !== "string" || item["name"] === "") throw bad(`${where}.name must be the function's name`);
        let args: unknown = {};
        const raw = item["arguments"];
        if (typeof raw === "string" && raw.trim() !== "") {
          try {
            args = JSON.parse(raw);
          } catch {
            throw HttpError.of(ErrorCode.InvalidJson, `${where}.arguments is not valid JSON`);
          }
        } else if (raw !== undefined && typeof raw !== "string") throw bad(`${where}.arguments must be a JSON string`);
        assistant().content += formatCallBlock(JSON.stringify({ name: item["name"], arguments: args }), id);
        return;
      }
      case "function_call_output":
        out.push({ role: "tool", content: outputText(item["output"], `${where}.output`), toolCallId: callId(item["call_id"], `${where}.call_id`) });
        return;
      default:
        throw bad(`${where}.type ${JSON.stringify(type)} is not supported: input items are messages, function_call and function_call_output`);
    }
  });
  return out;
}

/**
 * The request's input as items with ids, as `input_items` lists them (the
 * item resources of OpenAI's schema): a string is one user message of
 * `input_text`; a message's text parts are `input_text`, the assistant's
 * `output_text` with its (empty) annotations and logprobs; every item has a
 * status, and an id unless it came with one (`msg_…`, `fc_…`, `fco_…` by type).
 * `input` was checked by {@link toConversation} already.
 */
export function inputItemsOf(value: unknown): Record<string, unknown>[] {
  const items: unknown[] = typeof value === "string" ? [{ type: "message", role: "user", content: value }] : Array.isArray(value) ? value : [];
  return items.filter(isObject).map((item) => {
    const type = typeof item["type"] === "string" ? item["type"] : "message";
    const prefix = type === "function_call" ? "fc" : type === "function_call_output" ? "fco" : "msg";
    const resource: Record<string, unknown> = { id: `${prefix}_${randomUUID().replace(/-/g, "")}`, ...item, type, status: "completed" };
    if (type === "message") {
      const parts: unknown[] = typeof item["content"] === "string" ? [{ text: item["content"] }] : Array.isArray(item["content"]) ? item["content"] : [];
      const text = (part: unknown): string => (isObject(part) && typeof part["text"] === "string" ? part["text"] : "");
      resource["content"] = parts.map((part) => (item["role"] === "assistant" ? outputTextPart(text(part)) : { type: "input_text", text: text(part) }));
    }
    return resource;
  });
}

function toTools(value: unknown): { specs: ToolSpec[]; echo: unknown[] } {
  if (value === undefined || value === null) return { specs: [], echo: [] };
  if (!Array.isArray(value)) throw bad(`"tools" must be an array`);
  const chat = value.map((t, i) => {
    if (!isObject(t) || t["type"] !== "function") throw bad(`tools[${i}]: only {"type": "function", "name", "description", "parameters"} tools are supported`);
    if (typeof t["name"] !== "string") throw bad(`tools[${i}].name must be a string`);
    return { type: "function", function: { name: t["name"], description: t["description"] ?? "", parameters: t["parameters"] ?? { type: "object", properties: {} } } };
  });
  return { specs: toToolSpecs(chat), echo: value };
}

/** Validates a `POST /v1/responses` body. */
export function parseResponsesRequest(body: unknown, limits: { maxPromptBytes: number }): ResponsesInput {
  const b = requireObjectBody(body);
  refuseUnsupported(b, RESPONSES_PARAMETERS, "responses");
  const text = b["text"];
  if (text !== undefined && text !== null && !isObject(text)) throw bad(`"text" must be an object`);
  if (isObject(text)) {
    for (const key of Object.keys(text)) if (key !== "format" && text[key] !== null) throw bad(`"text.${key}" is not supported: only "text.format" is`);
  }
  const format = isObject(text) ? text["format"] : undefined;
  const answerFormat = parseAnswerFormat(format, "text.format", "responses");
  const input = toConversation(b["input"]);
  const instructions = b["instructions"];
  if (instructions !== undefined && instructions !== null && typeof instructions !== "string") throw bad(`"instructions" must be a string`);
  const bytes = promptBytes(input, typeof instructions === "string" ? instructions : undefined);
  if (bytes > limits.maxPromptBytes) {
    throw HttpError.of(ErrorCode.PayloadTooLarge, `input of ${bytes} bytes exceeds the limit of ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`);
  }
  const { specs, echo } = toTools(b["tools"]);
  const choice = parseToolChoice(b["tool_choice"], "responses");
  checkToolChoice(choice, specs);
  const previous = b["previous_response_id"];
  if (previous !== undefined && previous !== null && (typeof previous !== "string" || previous === "")) throw bad(`"previous_response_id" must be a response id`);
  const flag = (key: string, fallback: boolean): boolean => {
    const v = b[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== "boolean") throw bad(`"${key}" must be true or false`);
    return v;
  };
  const maxOutputTokens = optionalNumber(b, "max_output_tokens", (n) => Number.isInteger(n) && n >= 1, "a positive integer");
  const temperature = optionalNumber(b, "temperature", (n) => n >= 0 && n <= 2, "a number in 0..2");
  const maxToolCalls = optionalNumber(b, "max_tool_calls", (n) => Number.isInteger(n) && n >= 1, "a positive integer");
  const parallelToolCalls = flag("parallel_tool_calls", true);
  const { topP } = samplingOptions(b);
  const maxCalls = parallelToolCalls ? maxToolCalls : 1;
  const metadata = b["metadata"];
  if (metadata !== undefined && metadata !== null && !isObject(metadata)) throw bad(`"metadata" must be an object`);
  const policy = validatePolicy(b["interlace_policy"], specs, "interlace_policy");
  const logprobs = parseResponsesLogprobs(b);
  return {
    model: typeof b["model"] === "string" ? b["model"] : "interlace",
    stream: flag("stream", false),
    store: flag("store", true),
    ...(typeof previous === "string" ? { previousResponseId: previous } : {}),
    ...(typeof instructions === "string" ? { instructions } : {}),
    input,
    inputItems: inputItemsOf(b["input"]),
    tools: choice === "none" ? [] : specs,
    toolsEcho: echo,
    toolChoiceEcho: b["tool_choice"] ?? "auto",
    formatEcho: answerFormat !== undefined ? format : { type: "text" },
    parallelToolCalls,
    ...(maxToolCalls !== undefined ? { maxToolCalls } : {}),
    generation: {
      ...(choice !== undefined && choice !== "auto" && choice !== "none" ? { toolChoice: choice } : {}),
      ...(maxCalls !== undefined ? { maxCalls } : {}),
      ...(answerFormat !== undefined ? { answerFormat } : {}),
      ...(topP !== undefined ? { topP } : {}),
      ...(logprobs !== undefined ? { logprobs } : {}),
    },
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(topP !== undefined ? { topP } : {}),
    metadata: isObject(metadata) ? metadata : {},
    ...(policy !== undefined ? { policy } : {}),
  };
}

export interface MessageItem {
  type: "message";
  id: string;
  status: "in_progress" | "completed" | "incomplete";
  role: "assistant";
  content: { type: "output_text"; text: string; annotations: never[]; logprobs: OpenAiTokenLogprob[] }[];
}

export interface FunctionCallItem {
  type: "function_call";
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: "in_progress" | "completed";
}

export type OutputItem = MessageItem | FunctionCallItem;

export function messageItem(id: string, text: string, status: MessageItem["status"], logprobs: OpenAiTokenLogprob[] = []): MessageItem {
  return { type: "message", id, status, role: "assistant", content: status === "in_progress" && text === "" ? [] : [outputTextPart(text, logprobs)] };
}

/** An `output_text` part; `logprobs` its tokens' (empty unless `include` asked for them). */
export function outputTextPart(text: string, logprobs: OpenAiTokenLogprob[] = []): MessageItem["content"][number] {
  return { type: "output_text", text, annotations: [], logprobs };
}

/** The output items of a finished completion: its text (when any, or when a stream already opened it), then its calls. */
export function outputItems(result: CompletionResult, messageId: string, withMessage = result.content !== ""): OutputItem[] {
  const items: OutputItem[] = [];
  if (withMessage) items.push(messageItem(messageId, result.content, result.finishReason === "length" ? "incomplete" : "completed", openAiLogprobs(result.logprobs ?? [])));
  for (const c of result.toolCalls) {
    items.push({ type: "function_call", id: `fc_${c.id}`, call_id: c.id, name: c.name, arguments: JSON.stringify(c.arguments), status: "completed" });
  }
  return items;
}

/** The completion's turn as the conversation stores it (what a chat client would send back). */
export function assistantTurn(result: CompletionResult): ConversationMessage {
  const calls = result.toolCalls.map((c) => formatCallBlock(JSON.stringify({ name: c.name, arguments: c.arguments }), c.id)).join("");
  return { role: "assistant", content: result.content + calls };
}

/** Usage in the Responses shape: prompt tokens served from resident cells (or the upstream's prefix cache, where reported) count as cached. */
export function responsesUsage(result: CompletionResult): Record<string, unknown> {
  const input = result.usage.promptTokens;
  const output = result.usage.completionTokens;
  return {
    input_tokens: input,
    // OpenAI counts the prompt-cache writes it bills; cells kept resident here cost nothing more.
    input_tokens_details: { cached_tokens: result.usage.reusedPrefixTokens, cache_write_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

/**
 * A failed response's `error`: its code is one of the few OpenAI's schema
 * allows (a capacity refusal is `rate_limit_exceeded`, a request the engine
 * cannot serve `invalid_prompt`, the rest `server_error`); the stream's
 * `error` event that follows carries Interlace's own code.
 */
export function responseError(err: HttpError): { code: "rate_limit_exceeded" | "invalid_prompt" | "server_error"; message: string } {
  const code = err.status === 429 ? "rate_limit_exceeded" : err.status < 500 ? "invalid_prompt" : "server_error";
  return { code, message: err.message };
}

export interface ResponseShell {
  id: string;
  createdAt: number;
  input: ResponsesInput;
}

/** The `response` object; `result` absent: in progress. */
export function responseObject(shell: ResponseShell, result?: CompletionResult, output: OutputItem[] = []): Record<string, unknown> {
  const { input } = shell;
  const incomplete = result?.finishReason === "length";
  return {
    id: shell.id,
    object: "response",
    created_at: shell.createdAt,
    status: result === undefined ? "in_progress" : incomplete ? "incomplete" : "completed",
    error: null,
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    instructions: input.instructions ?? null,
    max_output_tokens: input.maxOutputTokens ?? null,
    model: input.model,
    output,
    parallel_tool_calls: input.parallelToolCalls,
    previous_response_id: input.previousResponseId ?? null,
    reasoning: { effort: null, summary: null },
    store: input.store,
    temperature: input.temperature ?? 0,
    text: { format: input.formatEcho },
    tool_choice: input.toolChoiceEcho,
    max_tool_calls: input.maxToolCalls ?? null,
    tools: input.toolsEcho,
    top_p: input.topP ?? 1,
    truncation: "disabled",
    // Optional and not nullable in OpenAI's schema: absent until there is a result.
    ...(result !== undefined ? { usage: responsesUsage(result) } : {}),
    metadata: input.metadata,
    ...(result !== undefined ? { interlace: { ...interlaceExtension(result, input.policy !== undefined), continued: result.continued === true } } : {}),
  };
}
