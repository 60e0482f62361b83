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
import { presentFields, responsesBodySchema, validateResponsesBody, type InputItem, type ResponsesBody } from "../../../common/src/wire/index.js";
import type { CompletionResult } from "../engine/index.js";
import { HttpError } from "./http-errors.js";
import { answerFormatOf, checkToolChoice, responsesLogprobsOf, samplingOptions, toolChoiceOf, type GenerationOptions } from "./generation-options.js";
import { contentText, interlaceExtension, openAiLogprobs, toToolSpecs, type OpenAiTokenLogprob } from "./openai.js";
import { RESPONSES_PARAMETERS, refuseUnsupported } from "./openai-parameters.js";
import { promptBytes, requireObjectBody, validatePolicy } from "./validate-request.js";

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

/** Schema-checked input items → conversation messages (consecutive assistant text and calls form one assistant turn). */
export function toConversation(input: ResponsesBody["input"]): ConversationMessage[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  const out: ConversationMessage[] = [];
  const assistant = (): ConversationMessage => {
    const last = out.at(-1);
    if (last?.role === "assistant") return last;
    const m: ConversationMessage = { role: "assistant", content: "" };
    out.push(m);
    return m;
  };
  input.forEach((item, i) => {
    switch (item.type ?? "message") {
      case "message": {
        const content = contentText(item.content);
        if (item.role === "assistant") assistant().content += content;
        else out.push({ role: item.role === "user" ? "user" : "system", content });
        return;
      }
      case "function_call": {
        let args: unknown = {};
        const raw = item.arguments ?? "";
        if (raw.trim() !== "") {
          // Not a schema matter: the arguments' JSON text must parse.
          try {
            args = JSON.parse(raw);
          } catch {
            throw HttpError.of(ErrorCode.InvalidJson, `input[${i}].arguments is not valid JSON`);
          }
        }
        assistant().content += formatCallBlock(JSON.stringify({ name: item.name, arguments: args }), item.call_id ?? "");
        return;
      }
      case "function_call_output":
        out.push({ role: "tool", content: contentText(item.output), toolCallId: item.call_id ?? "" });
        return;
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
export function inputItemsOf(input: ResponsesBody["input"]): Record<string, unknown>[] {
  const items: InputItem[] = typeof input === "string" ? [{ type: "message", role: "user", content: input }] : input;
  return items.map((item) => {
    const type = item.type ?? "message";
    const prefix = type === "function_call" ? "fc" : type === "function_call_output" ? "fco" : "msg";
    const resource: Record<string, unknown> = { id: `${prefix}_${randomUUID().replace(/-/g, "")}`, ...item, type, status: "completed" };
    if (type === "message") {
      const parts = typeof item.content === "string" ? [{ text: item.content }] : (item.content ?? []);
      resource["content"] = parts.map((part) => (item.role === "assistant" ? outputTextPart(part.text) : { type: "input_text", text: part.text }));
    }
    return resource;
  });
}

/** Interlace's own fields of the Responses body (the schema lists them; the parameter table does not). */
const RESPONSES_EXTENSIONS = Object.keys(responsesBodySchema["properties"] as object).filter((k) => k.startsWith("interlace_"));

/**
 * Validates a `POST /v1/responses` body: every parameter is applied or
 * refused (`openai-parameters.ts`), then the body is checked against its
 * schema (`common/src/wire/responses-schema.ts`). The checks left here are
 * what a schema cannot say, each marked.
 */
export function parseResponsesRequest(body: unknown, limits: { maxPromptBytes: number }): ResponsesInput {
  const present = presentFields(requireObjectBody(body));
  refuseUnsupported(present, RESPONSES_PARAMETERS, "responses", RESPONSES_EXTENSIONS);
  const checked = validateResponsesBody(present);
  if (!checked.ok) throw bad(checked.error);
  const b = checked.value;
  const format = b.text?.format ?? undefined;
  const answerFormat = answerFormatOf(format, "text.format");
  const input = toConversation(b.input);
  // Not a schema matter: the byte limit is the pod's flag.
  const bytes = promptBytes(input, b.instructions);
  if (bytes > limits.maxPromptBytes) {
    throw HttpError.of(ErrorCode.PayloadTooLarge, `input of ${bytes} bytes exceeds the limit of ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`);
  }
  const tools = b.tools ?? [];
  const specs = toToolSpecs(tools.map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description ?? "", parameters: t.parameters ?? null } })));
  const choice = toolChoiceOf(b.tool_choice);
  // Not a schema matter: a forced call needs its tool among the request's tools.
  checkToolChoice(choice, specs);
  const parallelToolCalls = b.parallel_tool_calls ?? true;
  const topP = b.top_p;
  const maxCalls = parallelToolCalls ? b.max_tool_calls : 1;
  // Not a schema matter: the policy's calls name the request's tools.
  const policy = validatePolicy(b.interlace_policy, specs, "interlace_policy");
  const logprobs = responsesLogprobsOf(b);
  return {
    model: b.model ?? "interlace",
    stream: b.stream === true,
    store: b.store ?? true,
    ...(b.previous_response_id !== undefined ? { previousResponseId: b.previous_response_id } : {}),
    ...(b.instructions !== undefined ? { instructions: b.instructions } : {}),
    input,
    inputItems: inputItemsOf(b.input),
    tools: choice === "none" ? [] : specs,
    toolsEcho: tools,
    toolChoiceEcho: b.tool_choice ?? "auto",
    formatEcho: answerFormat !== undefined ? format : { type: "text" },
    parallelToolCalls,
    ...(b.max_tool_calls !== undefined ? { maxToolCalls: b.max_tool_calls } : {}),
    generation: {
      ...(choice !== undefined && choice !== "auto" && choice !== "none" ? { toolChoice: choice } : {}),
      ...(maxCalls !== undefined ? { maxCalls } : {}),
      ...(answerFormat !== undefined ? { answerFormat } : {}),
      ...samplingOptions(b),
      ...(logprobs !== undefined ? { logprobs } : {}),
    },
    ...(b.max_output_tokens !== undefined ? { maxOutputTokens: b.max_output_tokens } : {}),
    ...(b.temperature !== undefined ? { temperature: b.temperature } : {}),
    ...(topP !== undefined ? { topP } : {}),
    metadata: b.metadata ?? {},
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
