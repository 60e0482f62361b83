/**
 * @module A call's prompt for one of its outputs: the template up to that
 * output's placeholder, inputs filled with their variables' values (a list
 * of variables joined by blank lines) and earlier outputs with what was
 * generated for them. The prompt comes cut at the start of every variable
 * (Parrot's PrefixHash positions): the text before `{{input:x}}` is one
 * segment, `x`'s value and the text after it up to the next variable the
 * next, so requests sharing a template prefix (or a prefix and a value)
 * share the leading hashes of their chains.
 */
import type { ProgramCall } from "./program-request.js";

export interface RenderedPrompt {
  text: string;
  /** The prompt cut at variable boundaries; joined, they are `text`. */
  segments: string[];
}

/** `value(variable)` must answer for every input variable and every earlier output of the call. */
export function renderUntil(call: ProgramCall, output: string, value: (variable: string) => string): RenderedPrompt {
  const segments: string[] = [];
  let current = "";
  const cut = (): void => {
    if (current !== "") segments.push(current);
    current = "";
  };
  for (const p of call.pieces) {
    if (p.kind === "text") {
      current += p.text;
      continue;
    }
    cut();
    if (p.kind === "output" && p.name === output) break;
    const variables = p.kind === "input" ? call.bind.get(p.name)! : [call.produces.get(p.name)!];
    current += variables.map(value).join("\n\n");
  }
  if (current !== "") segments.push(current);
  return { text: segments.join(""), segments };
}
