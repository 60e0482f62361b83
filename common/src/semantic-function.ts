/**
 * @module Semantic functions (Parrot §4.1): a prompt template whose
 * `{{input:x}}` and `{{output:y}}` placeholders are Semantic Variables. The
 * operator checks an AgentApp's functions with {@link checkSemanticFunction}
 * (the reason names the field), the router parses them into pieces to render
 * prompts and to cut prefix hashes at variable boundaries. An output's prompt
 * is the template up to its placeholder; outputs are generated in template
 * order, each seeing the values generated before it.
 */

/** Generation settings of one output variable. */
export interface SemanticOutput {
  name: string;
  /** Tokens generated for this output at most (capped by the app's maxTokens). */
  maxTokens: number;
  temperature: number;
}

/** A semantic function as an AgentApp declares it (defaults filled in: the app config's shape). */
export interface SemanticFunction {
  name: string;
  template: string;
  outputs: SemanticOutput[];
  /**
   * Generate with the app's tools in its calling mode (calls go through the
   * ToolPools as in a session): all of them (`true`), none, or only the named ones.
   */
  tools: boolean | readonly string[];
}

/**
 * Size bounds of one semantic function, the same for an AgentApp's
 * (`spec.semanticFunctions`, enforced by the CRD schema) and for one defined
 * in a program request (enforced by the router).
 */
export const SEMANTIC_FUNCTION_LIMITS = {
  /** Longest template, in UTF-16 code units as the API server counts a string's length. */
  maxTemplateLength: 65_536,
  /** Most outputs of one function. */
  maxOutputs: 16,
  /** Most functions in one AgentApp, or defined in one program. */
  maxFunctions: 64,
} as const;

export type TemplatePiece = { kind: "text"; text: string } | { kind: "input"; name: string } | { kind: "output"; name: string };

export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const PLACEHOLDER = /\{\{\s*(input|output)\s*:\s*([^}]*?)\s*\}\}/g;

/** The app's tools a function generates with: all of them, none, or the ones it names. */
export function functionTools<T extends { name: string }>(fn: Pick<SemanticFunction, "tools">, tools: readonly T[]): T[] {
  const allowed = fn.tools;
  if (typeof allowed === "boolean") return allowed ? [...tools] : [];
  return tools.filter((t) => allowed.includes(t.name));
}

/** The template cut at its placeholders (text pieces are never empty). */
export function parseTemplate(template: string): TemplatePiece[] {
  const pieces: TemplatePiece[] = [];
  let at = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    if (m.index > at) pieces.push({ kind: "text", text: template.slice(at, m.index) });
    pieces.push({ kind: m[1] as "input" | "output", name: m[2]! });
    at = m.index + m[0].length;
  }
  if (at < template.length) pieces.push({ kind: "text", text: template.slice(at) });
  return pieces;
}

/** Input variable names in first-use order. */
export function templateInputs(pieces: readonly TemplatePiece[]): string[] {
  return [...new Set(pieces.filter((p) => p.kind === "input").map((p) => p.name))];
}

/** Output variable names in template order. */
export function templateOutputs(pieces: readonly TemplatePiece[]): string[] {
  return pieces.filter((p) => p.kind === "output").map((p) => p.name);
}

/**
 * Checks one function (`field` is its path, e.g. `spec.semanticFunctions[0]`):
 * placeholder names, at least one output, every output placeholder declared
 * in `outputs` and every declared output used, no output twice, and no input
 * that is also one of the function's outputs (a cycle through the function).
 * Returns the first problem, or null.
 */
export function checkSemanticFunction(fn: { name: string; template: string; outputs?: readonly { name: string }[] }, field: string): string | null {
  if (!VARIABLE_NAME.test(fn.name)) return `${field}.name: "${fn.name}" must match ${VARIABLE_NAME.source}`;
  const pieces = parseTemplate(fn.template);
  for (const p of pieces) {
    if (p.kind !== "text" && !VARIABLE_NAME.test(p.name)) return `${field}.template: placeholder {{${p.kind}:${p.name}}} has an invalid variable name (${VARIABLE_NAME.source})`;
  }
  const outputs = templateOutputs(pieces);
  if (outputs.length === 0) return `${field}.template: needs at least one {{output:name}} placeholder`;
  const seen = new Set<string>();
  for (const o of outputs) {
    if (seen.has(o)) return `${field}.template: output "${o}" appears twice (duplicate output)`;
    seen.add(o);
  }
  const declared = (fn.outputs ?? []).map((o) => o.name);
  const dupDeclared = declared.find((n, i) => declared.indexOf(n) !== i);
  if (dupDeclared !== undefined) return `${field}.outputs: "${dupDeclared}" is declared twice (duplicate output)`;
  for (const o of outputs) if (!declared.includes(o)) return `${field}.outputs: the template's {{output:${o}}} is not declared (undeclared variable)`;
  for (const d of declared) if (!seen.has(d)) return `${field}.outputs: "${d}" has no {{output:${d}}} placeholder in the template (undeclared variable)`;
  for (const i of templateInputs(pieces)) {
    if (seen.has(i)) return `${field}.template: "${i}" is both an input and an output of ${fn.name} (a cycle: the output would feed its own prompt)`;
  }
  return null;
}
