/**
 * @module The generation parameters that chat completions and Responses
 * share, mapped once onto the engine's fields from bodies the wire schemas
 * (`common/src/wire/`) have checked: `tool_choice` (each endpoint's shape),
 * the answer format (`response_format` / `text.format`), `stop`, nucleus
 * sampling and the repetition penalties. Left here: what a schema cannot
 * say (a forced call needs its tool; a `$ref` must resolve), each a 400
 * naming the field.
 */
import { ErrorCode, type AnswerFormat, type JsonSchema, type ToolChoice, type ToolSpec } from "../../../common/src/index.js";
import { inlineLocalRefs, type ChatCompletionBody, type ResponseFormatBody, type ResponsesBody, type TextFormat } from "../../../common/src/wire/index.js";
import type { CompletionRequest } from "../engine/index.js";
import { HttpError } from "./http-errors.js";
import { isObject } from "./validate-request.js";

const bad = (message: string): HttpError => HttpError.of(ErrorCode.BadRequest, message);

/** The engine fields these parameters set. */
export type GenerationOptions = Pick<CompletionRequest, "toolChoice" | "maxCalls" | "answerFormat" | "stop" | "topP" | "frequencyPenalty" | "presencePenalty" | "logprobs">;

/** The one `include` value Responses implements. */
export const INCLUDE_LOGPROBS = "message.output_text.logprobs";

/**
 * Chat completions' `logprobs` (true: the content tokens' log-probabilities)
 * and `top_logprobs` (alternatives per token, schema-bounded). Not a schema
 * matter: OpenAI allows `top_logprobs` only with `logprobs: true`.
 */
export function chatLogprobsOf(b: Pick<ChatCompletionBody, "logprobs" | "top_logprobs">): { top: number } | undefined {
  if (b.logprobs === true) return { top: b.top_logprobs ?? 0 };
  if (b.top_logprobs !== undefined) throw bad(`"top_logprobs" is only allowed when "logprobs" is true`);
  return undefined;
}

/**
 * Responses' `include` (only `message.output_text.logprobs`) and
 * `top_logprobs`: either asks for the output text's log-probabilities
 * (`top_logprobs` above 0 alone too, rather than being ignored).
 */
export function responsesLogprobsOf(b: Pick<ResponsesBody, "include" | "top_logprobs">): { top: number } | undefined {
  const include = b.include ?? [];
  for (const value of include) if (value !== INCLUDE_LOGPROBS) throw bad(`"include" value ${JSON.stringify(value)} is not supported: only "${INCLUDE_LOGPROBS}" is`);
  return include.length > 0 || (b.top_logprobs ?? 0) > 0 ? { top: b.top_logprobs ?? 0 } : undefined;
}

/**
 * `tool_choice` (schema-checked): `auto`, `none`, `required`, or one function
 * — chat completions name it as `{type: "function", function: {name}}`,
 * Responses as `{type: "function", name}`.
 */
export function toolChoiceOf(value: ChatCompletionBody["tool_choice"] | ResponsesBody["tool_choice"]): ToolChoice | undefined {
  if (value === undefined || typeof value === "string") return value;
  return { name: "function" in value ? value.function.name : value.name };
}

/** A forcing `tool_choice` needs the tools it forces. */
export function checkToolChoice(choice: ToolChoice | undefined, tools: readonly ToolSpec[]): void {
  if (choice === undefined || choice === "auto" || choice === "none") return;
  if (tools.length === 0) throw bad(`"tool_choice" forces a call, but "tools" is empty`);
  if (typeof choice === "object" && !tools.some((t) => t.name === choice.name)) throw HttpError.of(ErrorCode.UnknownTool, `"tool_choice" names "${choice.name}", which is not one of "tools"`);
}

/**
 * An answer format (schema-checked): `{type: "text"}` (none),
 * `{type: "json_object"}`, or `{type: "json_schema", ...}` whose schema sits
 * under `json_schema` (chat completions) or beside `type` (Responses'
 * `text.format`). What the schema cannot say: its local `$ref`s must resolve.
 */
export function answerFormatOf(value: ResponseFormatBody | TextFormat | null | undefined, where: string): AnswerFormat | undefined {
  if (value === undefined || value === null || value.type === "text") return undefined;
  if (value.type === "json_object") return { type: "json_object" };
  const [schema, path] = "json_schema" in value && value.json_schema !== undefined ? [value.json_schema.schema, `${where}.json_schema`] : [(value as TextFormat).schema ?? {}, where];
  return { type: "json_schema", schema: inlineRefs(schema, `${path}.schema`) };
}

/**
 * The schema with its local `$ref`s (`#/$defs/X`, `#/definitions/X`, as
 * pydantic and zod write nested models) replaced by what they name, so the
 * grammar builder sees one tree. A reference elsewhere, or a recursive one,
 * is a 400.
 */
export function inlineRefs(schema: Record<string, unknown>, where: string): JsonSchema {
  const inlined = inlineLocalRefs(schema, where);
  if (!inlined.ok) throw bad(inlined.error);
  return inlined.value;
}

/** `stop` (schema-checked) as a list; an empty one is none. */
export function stopOf(value: string | string[] | undefined): string[] | undefined {
  const list = typeof value === "string" ? [value] : value;
  return list !== undefined && list.length > 0 ? list : undefined;
}

/** The sampling fields both endpoints name alike (schema-checked); a zero penalty is none. */
export function samplingOptions(b: { top_p?: number; frequency_penalty?: number; presence_penalty?: number }): GenerationOptions {
  return {
    ...(b.top_p !== undefined ? { topP: b.top_p } : {}),
    ...(b.frequency_penalty !== undefined && b.frequency_penalty !== 0 ? { frequencyPenalty: b.frequency_penalty } : {}),
    ...(b.presence_penalty !== undefined && b.presence_penalty !== 0 ? { presencePenalty: b.presence_penalty } : {}),
  };
}

/** What the model is told of a required answer format (sessions are told it by the engine). */
export { answerInstruction } from "../cml/index.js";
