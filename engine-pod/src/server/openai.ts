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
import {
  chatCompletionBodySchema,
  engineRole,
  presentFields,
  validateChatCompletionBody,
  type ChatCompletionBody,
  type ChatCompletionMessage,
} from "../../../common/src/wire/index.js";
import type { CompletionRequest, CompletionResult, TokenLogprob } from "../engine/index.js";
import { HttpError } from "./http-errors.js";
import { answerFormatOf, answerInstruction, chatLogprobsOf, checkToolChoice, samplingOptions, stopOf, toolChoiceOf } from "./generation-options.js";
import { CHAT_COMPLETIONS_PARAMETERS, refuseUnsupported } from "./openai-parameters.js";
import { checkCompletionTools } from "./resolve-tools.js";
import { promptBytes, requireObjectBody, validatePolicy } from "./validate-request.js";

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

/** Schema-checked `content` (a string, null, or text parts: chat's and Responses' alike) as text. */
export function contentText(content: string | readonly { text: string }[] | null | undefined): string {
  if (content === null || content === undefined) return "";
  return typeof content === "string" ? content : content.map((part) => part.text).join("");
}

/** An assistant message's earlier calls as call blocks; their JSON text must parse (the schema cannot say so). */
function toolCallsText(calls: ChatCompletionMessage["tool_calls"], where: string): string {
  return (calls ?? [])
    .map((c, i) => {
      const raw = c.function.arguments;
      let args: unknown = {};
      if (typeof raw === "string" && raw !== "") {
        try {
          args = JSON.parse(raw);
        } catch {
          throw HttpError.of(ErrorCode.InvalidJson, `${where}[${i}].function.arguments is not valid JSON`);
        }
      } else if (typeof raw === "object") args = raw;
      return formatCallBlock(JSON.stringify({ name: c.function.name, arguments: args }), c.id);
    })
    .join("");
}

/** Schema-checked OpenAI messages → engine chat messages; a tool result carries the id of the call it answers. */
export function toChatMessages(messages: readonly ChatCompletionMessage[]): (ChatMessage & { toolCallId?: string })[] {
  return messages.map((m, i): ChatMessage & { toolCallId?: string } => {
    const content = contentText(m.content);
    if (m.role === "assistant") return { role: "assistant", content: content + toolCallsText(m.tool_calls, `messages[${i}].tool_calls`) };
    // The prompt renderer writes a tool result as `[INTR] id [HEAD] content [END]`, content as plain text.
    if (m.role === "tool") return { role: "tool", content, toolCallId: m.tool_call_id ?? "" };
    return { role: engineRole(m.role), content };
  });
}

/** Schema-checked OpenAI function tools → ToolSpecs (`interlace_estimated_latency_ms` on the function carries the LPT hint). */
export function toToolSpecs(tools: NonNullable<ChatCompletionBody["tools"]> | undefined): ToolSpec[] {
  const specs = (tools ?? []).map(({ function: fn }) => {
    // Clients send a `$schema` dialect (the Agents SDK: draft-07 from zod); OpenAI ignores it, and so do we.
    const params = fn.parameters !== undefined && fn.parameters !== null ? Object.fromEntries(Object.entries(fn.parameters).filter(([k]) => k !== "$schema")) : { type: "object", properties: {} };
    return { name: fn.name, description: fn.description ?? "", parameters: params, ...(fn.interlace_estimated_latency_ms !== undefined ? { estimatedLatencyMs: fn.interlace_estimated_latency_ms } : {}) };
  });
  // The parameters must compile as JSON Schema, and names be unique: the tool checks sessions use too.
  return checkCompletionTools(specs);
}

/** Interlace's own fields of the chat-completions body (the schema lists them; the parameter table does not). */
const CHAT_EXTENSIONS = Object.keys(chatCompletionBodySchema["properties"] as object).filter((k) => k.startsWith("interlace_"));

/**
 * Validates a chat-completions body: every parameter is applied or refused
 * (`openai-parameters.ts`), then the body is checked against its schema
 * (`common/src/wire/chat-completions-schema.ts`). The checks left here are
 * what a schema cannot say, each marked.
 */
export function parseChatCompletion(body: unknown, limits: { maxPromptBytes: number }): ChatCompletionInput {
  const present = presentFields(requireObjectBody(body));
  refuseUnsupported(present, CHAT_COMPLETIONS_PARAMETERS, "chat completions", CHAT_EXTENSIONS);
  const checked = validateChatCompletionBody(present);
  if (!checked.ok) throw bad(checked.error);
  const b = checked.value;
  const messages = toChatMessages(b.messages);
  // Not a schema matter: the byte limit is the pod's flag.
  const bytes = promptBytes(messages);
  if (bytes > limits.maxPromptBytes) {
    throw HttpError.of(ErrorCode.PayloadTooLarge, `messages of ${bytes} bytes exceed the limit of ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`);
  }
  const tools = toToolSpecs(b.tools);
  const toolChoice = toolChoiceOf(b.tool_choice);
  // Not a schema matter: a forced call needs its tool among the request's tools.
  checkToolChoice(toolChoice, tools);
  const answerFormat = answerFormatOf(b.response_format, "response_format");
  const stop = stopOf(b.stop);
  const maxTokens = b.max_completion_tokens ?? b.max_tokens;
  const raw = b.interlace_raw_cml === true;
  const request: ChatCompletionInput["request"] = {
    messages: answerFormat !== undefined ? withSystemText(messages, answerInstruction(answerFormat)) : messages,
    // `none`: the model is shown no tools, so it writes no call.
    tools: toolChoice === "none" ? [] : tools,
    ...(toolChoice !== undefined && toolChoice !== "auto" && toolChoice !== "none" ? { toolChoice } : {}),
    ...(b.parallel_tool_calls === false ? { maxCalls: 1 } : {}),
    ...(answerFormat !== undefined ? { answerFormat } : {}),
    ...(stop !== undefined ? { stop } : {}),
    ...samplingOptions(b),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(b.temperature !== undefined ? { temperature: b.temperature } : {}),
    ...(b.seed !== undefined ? { seed: b.seed } : {}),
    ...(raw ? { stopAtCalls: "never" as const } : {}),
  };
  if (b.interlace_continue === true) {
    // Not a schema matter: which message comes last.
    if (messages[messages.length - 1]?.role !== "assistant") throw bad(`"interlace_continue" needs the last message to be the assistant's`);
    request.continueAssistant = true;
  }
  // Not a schema matter: the policy's calls name the request's tools.
  const policy: ScriptedPolicySpec | undefined = validatePolicy(b.interlace_policy, tools, "interlace_policy");
  if (policy !== undefined) request.policy = policy;
  const logprobs = chatLogprobsOf(b);
  if (logprobs !== undefined) {
    // Not a schema matter: raw CML streams the markers, which are no content tokens.
    if (raw) throw bad(`"logprobs" covers the content tokens: not with interlace_raw_cml`);
    request.logprobs = logprobs;
  }
  const n = b.n ?? 1;
  // Not a schema matter: choices sample the model, which a script or raw CML replaces.
  if (n > 1 && (policy !== undefined || raw)) throw bad(`"n" above 1 samples the model's own choices: not with interlace_policy or interlace_raw_cml`);
  return {
    model: b.model ?? "interlace",
    stream: b.stream === true,
    includeUsage: b.stream_options?.include_usage === true,
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
