/**
 * @module The generation parameters that chat completions and Responses
 * share, parsed once: `tool_choice` (each endpoint's shape), the answer
 * format (`response_format` / `text.format`), `stop`, nucleus sampling and
 * the repetition penalties. A value the engine cannot honour is a 400
 * naming the field.
 */
import { ErrorCode, type AnswerFormat, type JsonSchema, type ToolChoice, type ToolSpec } from "../../../common/src/index.js";
import { inlineLocalRefs } from "../../../common/src/wire/index.js";
import type { CompletionRequest } from "../engine/index.js";
import { HttpError } from "./http-errors.js";
import { isObject } from "./validate-request.js";

const bad = (message: string): HttpError => HttpError.of(ErrorCode.BadRequest, message);

/** The engine fields these parameters set. */
export type GenerationOptions = Pick<CompletionRequest, "toolChoice" | "maxCalls" | "answerFormat" | "stop" | "topP" | "frequencyPenalty" | "presencePenalty">;

/**
 * `tool_choice`: `auto`, `none`, `required`, or one function — chat
 * completions name it as `{type: "function", function: {name}}`, Responses
 * as `{type: "function", name}`.
 */
export function parseToolChoice(value: unknown, shape: "chat" | "responses"): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === "auto" || value === "none" || value === "required") return value;
  if (isObject(value) && value["type"] === "function") {
    const name = shape === "chat" ? (isObject(value["function"]) ? value["function"]["name"] : undefined) : value["name"];
    if (typeof name === "string" && name !== "") return { name };
  }
  const named = shape === "chat" ? `{"type": "function", "function": {"name"}}` : `{"type": "function", "name"}`;
  throw bad(`"tool_choice" must be "auto", "none", "required" or ${named}`);
}

/** A forcing `tool_choice` needs the tools it forces. */
export function checkToolChoice(choice: ToolChoice | undefined, tools: readonly ToolSpec[]): void {
  if (choice === undefined || choice === "auto" || choice === "none") return;
  if (tools.length === 0) throw bad(`"tool_choice" forces a call, but "tools" is empty`);
  if (typeof choice === "object" && !tools.some((t) => t.name === choice.name)) throw HttpError.of(ErrorCode.UnknownTool, `"tool_choice" names "${choice.name}", which is not one of "tools"`);
}

/**
 * An answer format: `{type: "text"}` (none), `{type: "json_object"}`, or
 * `{type: "json_schema", ...}` whose schema sits under `json_schema` (chat
 * completions) or beside `type` (Responses' `text.format`).
 */
export function parseAnswerFormat(value: unknown, where: string, shape: "chat" | "responses"): AnswerFormat | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw bad(`"${where}" must be an object`);
  switch (value["type"]) {
    case "text":
      return undefined;
    case "json_object":
      return { type: "json_object" };
    case "json_schema": {
      const spec = shape === "chat" ? value["json_schema"] : value;
      const path = shape === "chat" ? `${where}.json_schema` : where;
      if (!isObject(spec)) throw bad(`"${path}" must be {"name", "schema", "strict"}`);
      if (typeof spec["name"] !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(spec["name"])) throw bad(`"${path}.name" must be 1 to 64 letters, digits, _ or -`);
      const schema = spec["schema"];
      if (!isObject(schema)) throw bad(`"${path}.schema" must be a JSON Schema object`);
      return { type: "json_schema", schema: inlineRefs(schema, `${path}.schema`) };
    }
    default:
      throw bad(`"${where}.type" must be "text", "json_object" or "json_schema"`);
  }
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

/** `stop`: a string or up to 4 non-empty strings. */
export function parseStop(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.length > 4 || list.some((s) => typeof s !== "string" || s === "")) throw bad(`"stop" must be a non-empty string or an array of at most 4 of them`);
  return list.length > 0 ? (list as string[]) : undefined;
}

/** An optional number in a range, or a 400 naming the field. */
export function optionalNumber(b: Record<string, unknown>, key: string, check: (n: number) => boolean, rule: string): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || !check(v)) throw bad(`"${key}" must be ${rule}`);
  return v;
}

/** The sampling fields both endpoints name alike. */
export function samplingOptions(b: Record<string, unknown>): GenerationOptions {
  const topP = optionalNumber(b, "top_p", (n) => n > 0 && n <= 1, "a number in (0, 1]");
  const penalty = (key: string): number | undefined => optionalNumber(b, key, (n) => n >= -2 && n <= 2, "a number in -2..2");
  const frequencyPenalty = penalty("frequency_penalty");
  const presencePenalty = penalty("presence_penalty");
  return {
    ...(topP !== undefined ? { topP } : {}),
    ...(frequencyPenalty !== undefined && frequencyPenalty !== 0 ? { frequencyPenalty } : {}),
    ...(presencePenalty !== undefined && presencePenalty !== 0 ? { presencePenalty } : {}),
  };
}

/** What the model is told of a required answer format (sessions are told it by the engine). */
export { answerInstruction } from "../cml/index.js";
