/**
 * @module The call grammar: a GBNF grammar (llama.cpp) that constrains one
 * call block once `[CALL]` has been sampled — an optional `id [HEAD]`, then a
 * JSON call `{"name": <a known tool>, "arguments": <that tool's schema>}`,
 * then `[END]`. Markers the model has as control tokens are referred to by id
 * (`<[id]>`): a literal "[END]" would make the model spell it character by
 * character (docs/engine-facts.md).
 */
import type { Llama, LlamaGrammar } from "node-llama-cpp";
import { CML, type CmlMarker, type ToolSpec } from "../../../common/src/index.js";
import { gbnfLiteral, GrammarBuilder, markerGbnf, repeat, type JsonGrammarBounds } from "./json-grammar.js";
import { normalizeSchema } from "./schema.js";

export { gbnfLiteral, markerGbnf } from "./json-grammar.js";

export interface CallGrammarOptions extends JsonGrammarBounds {
  /** Marker control tokens (id → marker); markers not listed are spelled as literal text. */
  markerTokens?: ReadonlyMap<number, CmlMarker>;
  /** Whether the block starts with `id [HEAD]`: `optional` (default), `required` or `none`. */
  callId?: "optional" | "required" | "none";
  /** Longest call id (default 16). */
  maxIdLength?: number;
}

/**
 * The GBNF grammar for one call block body after `[CALL]`: optional
 * `id [HEAD]`, a JSON call of one of `tools` with arguments matching its
 * parameters schema, then `[END]`. Throws only when `tools` is empty.
 */
export function buildCallGrammar(tools: readonly ToolSpec[], opts: CallGrammarOptions = {}): string {
  if (tools.length === 0) throw new Error("buildCallGrammar: no tools");
  const b = new GrammarBuilder(opts);
  const ws = b.prim("ws");
  const alts = tools.map((tool, i) => {
    const args = b.schema(normalizeSchema(tool.parameters), `args-${i}-${tool.name}`);
    return b.rule(`call-${i}-${tool.name}`, `${gbnfLiteral(JSON.stringify(tool.name))} ${ws} "," ${ws} "\\"arguments\\"" ${ws} ":" ${ws} ${args}`);
  });
  const call = b.rule("call", `"{" ${ws} "\\"name\\"" ${ws} ":" ${ws} ( ${alts.join(" | ")} ) ${ws} "}"`);
  const end = markerGbnf(CML.END, opts.markerTokens);
  const mode = opts.callId ?? "optional";
  if (mode === "none") return b.render(`${call} ${end}`);
  const id = b.rule("call-id", `${repeat("[a-zA-Z0-9_-]", 1, opts.maxIdLength ?? 16)} ${markerGbnf(CML.HEAD, opts.markerTokens)}`);
  return b.render(`${mode === "required" ? id : `${id}?`} ${call} ${end}`);
}

const compiled = new WeakMap<Llama, Map<string, Promise<LlamaGrammar>>>();

/**
 * {@link buildCallGrammar}, parsed by llama.cpp once per distinct tool set
 * and options (sessions of one app share it). Create a fresh
 * `LlamaGrammarEvaluationState` from it for every call block.
 */
export function createCallGrammar(llama: Llama, tools: readonly ToolSpec[], opts: CallGrammarOptions = {}): Promise<LlamaGrammar> {
  const text = buildCallGrammar(tools, opts);
  let byText = compiled.get(llama);
  if (byText === undefined) compiled.set(llama, (byText = new Map()));
  let grammar = byText.get(text);
  if (grammar === undefined) {
    grammar = llama.createGrammar({ grammar: text });
    byText.set(text, grammar);
    // A grammar llama.cpp rejects is not cached, so a fixed tool set can be retried.
    grammar.catch(() => byText!.delete(text));
  }
  return grammar;
}