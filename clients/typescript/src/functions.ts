/**
 * @module Semantic functions (Parrot §4.1): a prompt template whose
 * `{{input:x}}` and `{{output:y}}` placeholders are semantic variables.
 * {@link semanticFunction} defines one in code (a program request carries its
 * definition; the router checks it as the operator checks an AgentApp's and
 * names the field when it is wrong); {@link appFunction} names one of the
 * AgentApp's own. With a literal template, the input and output names are
 * types: `program.call(fn, inputs)` takes exactly the inputs and returns
 * exactly the outputs.
 */

type Trim<S extends string> = S extends ` ${infer R}` ? Trim<R> : S extends `${infer R} ` ? Trim<R> : S;

/** The names of the template's `{{kind:name}}` placeholders, as a union of string literals. */
export type Placeholders<T extends string, Kind extends "input" | "output"> = string extends T
  ? string
  : T extends `${string}{{${infer Inner}}}${infer Rest}`
    ? (Inner extends `${infer K}:${infer Name}` ? (Trim<K> extends Kind ? Trim<Name> : never) : never) | Placeholders<Rest, Kind>
    : never;

/** Generation settings of one output (absent: the router's defaults, capped by the app). */
export interface OutputSettings {
  maxTokens?: number;
  temperature?: number;
}

export interface SemanticFunctionSpec<T extends string> {
  /** Unique in the program, and not one of the AgentApp's functions' names. */
  name: string;
  template: T;
  /** For every output (each one's own settings in `outputs` win). */
  maxTokens?: number;
  temperature?: number;
  outputs?: Partial<Record<Placeholders<T, "output">, OutputSettings>>;
  /** The app's tools this function may call: all (`true`), none, or these. */
  tools?: boolean | readonly string[];
  /** Scripts each call's sessions, for the engine's generated test model. */
  policy?: Record<string, unknown>;
}

/** A semantic function with inputs `I` and outputs `O`; call it with `program.call(fn, inputs)`. */
export interface SemanticFunction<I extends string, O extends string> {
  readonly name: string;
  readonly inputs: readonly I[];
  readonly outputs: readonly O[];
  /** The definition a program request carries (absent: one of the app's own functions). */
  readonly definition?: FunctionDefinition;
  readonly policy?: Record<string, unknown>;
}

/** A function as a program request's `functions` entry. */
export interface FunctionDefinition {
  name: string;
  template: string;
  outputs: { name: string; maxTokens?: number; temperature?: number }[];
  tools: boolean | string[];
}

const PLACEHOLDER = /\{\{\s*(input|output)\s*:\s*([^}]*?)\s*\}\}/g;
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** The template's input names (first use order) and output names (template order). */
export function templateVariables(template: string): { inputs: string[]; outputs: string[] } {
  const inputs: string[] = [];
  const outputs: string[] = [];
  for (const m of template.matchAll(PLACEHOLDER)) {
    if (m[1] === "input" && !inputs.includes(m[2]!)) inputs.push(m[2]!);
    else if (m[1] === "output") outputs.push(m[2]!);
  }
  return { inputs, outputs };
}

/** Defines a semantic function in code. Throws for a bad name or a template without an output. */
export function semanticFunction<const T extends string>(spec: SemanticFunctionSpec<T>): SemanticFunction<Placeholders<T, "input">, Placeholders<T, "output">> {
  if (!VARIABLE_NAME.test(spec.name)) throw new TypeError(`semantic function name "${spec.name}" must match ${VARIABLE_NAME.source}`);
  const { inputs, outputs } = templateVariables(spec.template);
  if (outputs.length === 0) throw new TypeError(`${spec.name}: the template needs at least one {{output:name}} placeholder`);
  const own = (spec.outputs ?? {}) as Record<string, OutputSettings | undefined>;
  for (const o of Object.keys(own)) if (!outputs.includes(o)) throw new TypeError(`${spec.name}: outputs.${o} has no {{output:${o}}} placeholder`);
  const definition: FunctionDefinition = {
    name: spec.name,
    template: spec.template,
    outputs: outputs.map((name) => {
      const s = { maxTokens: spec.maxTokens, temperature: spec.temperature, ...own[name] };
      return { name, ...(s.maxTokens !== undefined ? { maxTokens: s.maxTokens } : {}), ...(s.temperature !== undefined ? { temperature: s.temperature } : {}) };
    }),
    tools: typeof spec.tools === "object" ? [...spec.tools] : (spec.tools ?? false),
  };
  return {
    name: spec.name,
    inputs: inputs as Placeholders<T, "input">[],
    outputs: outputs as Placeholders<T, "output">[],
    definition,
    ...(spec.policy !== undefined ? { policy: spec.policy } : {}),
  };
}

/**
 * One of the AgentApp's own semantic functions (`spec.semanticFunctions`:
 * named, reviewed templates), called by name; `client.function(name)` reads
 * the names from the router.
 */
export function appFunction<const I extends string, const O extends string>(name: string, names: { inputs: readonly I[]; outputs: readonly O[] }, policy?: Record<string, unknown>): SemanticFunction<I, O> {
  return { name, inputs: names.inputs, outputs: names.outputs, ...(policy !== undefined ? { policy } : {}) };
}
