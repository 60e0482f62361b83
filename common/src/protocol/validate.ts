/**
 * @module Validation of protocol messages with Ajv, as values: a receiver
 * gets either the typed message or one readable line saying what is wrong
 * (which the runner sends back as an error result). Also validates call
 * arguments against a tool's parameters schema.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { JsonSchema } from "../tools.js";
import {
  callMessageSchema,
  interruptMessageSchema,
  resultMessageSchema,
  type CallMessage,
  type InterruptMessage,
  type IntrMessage,
  type ResultMessage,
} from "./messages.js";

// ajv-formats is CommonJS with `exports.default`; under nodenext the default import is the module object.
type FormatsPlugin = (ajv: Ajv2020) => unknown;
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);

export type Validated<T> = { ok: true; value: T } | { ok: false; error: string };

/** Ajv errors as one line: `/deadline must be number; must have required property 'tool'`. */
export function describeErrors(errors: readonly ErrorObject[] | null | undefined, root = "message"): string {
  if (!errors || errors.length === 0) return `${root} does not match the schema`;
  const lines = errors.map((e) => {
    const where = e.instancePath === "" ? root : `${root}${e.instancePath.replace(/\//g, ".")}`;
    let msg = `${where} ${e.message ?? "is invalid"}`;
    if (e.keyword === "additionalProperties") msg += ` ("${(e.params as { additionalProperty: string }).additionalProperty}")`;
    if (e.keyword === "enum") msg += `: ${(e.params as { allowedValues: unknown[] }).allowedValues.map((x) => JSON.stringify(x)).join(", ")}`;
    return msg;
  });
  return [...new Set(lines)].join("; ");
}

function parseJson(data: Uint8Array | string): Validated<unknown> {
  try {
    return { ok: true, value: JSON.parse(typeof data === "string" ? data : Buffer.from(data).toString("utf8")) };
  } catch (err) {
    return { ok: false, error: `body is not valid JSON: ${(err as Error).message}` };
  }
}

function check<T>(validate: ValidateFunction, value: unknown, root: string): Validated<T> {
  if (validate(value)) return { ok: true, value: value as T };
  return { ok: false, error: describeErrors(validate.errors, root) };
}

const validateCall = ajv.compile(callMessageSchema);
const validateResult = ajv.compile(resultMessageSchema);
const validateInterrupt = ajv.compile(interruptMessageSchema);

/** Parses and validates a call message body. */
export function parseCallMessage(data: Uint8Array | string): Validated<CallMessage> {
  const json = parseJson(data);
  return json.ok ? check<CallMessage>(validateCall, json.value, "call") : json;
}

/** Parses and validates what arrived on an interrupt subject: a result or an interrupt. */
export function parseIntrMessage(data: Uint8Array | string): Validated<IntrMessage> {
  const json = parseJson(data);
  if (!json.ok) return json;
  const type = (json.value as { type?: unknown } | null)?.type;
  if (type === "result") return check<ResultMessage>(validateResult, json.value, "result");
  if (type === "interrupt") return check<InterruptMessage>(validateInterrupt, json.value, "interrupt");
  return { ok: false, error: `message type must be "result" or "interrupt", got ${JSON.stringify(type ?? null)}` };
}

/** Compiled argument validators, once per parameters schema object. */
const argValidators = new WeakMap<object, ValidateFunction | string>();

/** Validates call arguments against a tool's parameters schema; a broken schema is reported as such. */
export function validateArguments(parameters: JsonSchema, args: unknown, tool: string): Validated<Record<string, unknown>> {
  let v = argValidators.get(parameters);
  if (v === undefined) {
    try {
      v = ajv.compile(parameters);
    } catch (err) {
      v = `tool "${tool}" has an invalid parameters schema: ${(err as Error).message}`;
    }
    argValidators.set(parameters, v);
  }
  if (typeof v === "string") return { ok: false, error: v };
  return check<Record<string, unknown>>(v, args, "arguments");
}

/** Compiles a schema once for repeated use (the runner config file). */
export function compileSchema<T>(schema: JsonSchema, root: string): (value: unknown) => Validated<T> {
  const validate = ajv.compile(schema);
  return (value) => check<T>(validate, value, root);
}
