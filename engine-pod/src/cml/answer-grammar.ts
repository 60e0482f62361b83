/**
 * @module The answer grammar (OpenAI `response_format`): the text a
 * completion or session writes outside call blocks is one JSON value — any
 * JSON object (`json_object`) or a value of a JSON Schema (`json_schema`).
 * Where it may call tools, the text may open a call block instead: the
 * grammar admits `[CALL]` before the answer begins; the engine then hands the
 * block to the call grammar and drops this one (a completion that calls
 * answers in a later request; a session starts a fresh answer grammar once
 * the block ends). While a session's calls are still to be answered it may
 * not answer yet: the `awaiting` form admits only another call or a trap.
 */
import { CML, type AnswerFormat, type CmlMarker } from "../../../common/src/index.js";
import { GrammarBuilder, markerGbnf, type JsonGrammarBounds } from "./json-grammar.js";
import { normalizeSchema } from "./schema.js";

export interface AnswerGrammarOptions extends JsonGrammarBounds {
  /** Marker control tokens (id → marker); markers not listed are spelled as literal text. */
  markerTokens?: ReadonlyMap<number, CmlMarker>;
  /** The completion has tools and may call one instead of answering. */
  allowCall: boolean;
  /**
   * A session's calls are outstanding (or held for the turn's end): the text
   * may open another call block or a trap (`[TRAP] [END]`, wait for the
   * results), not the answer, which should read them.
   */
  awaiting?: boolean;
}

/** Whitespace a model may write around the value (a newline after the turn's opening is common). */
const LEAD = "[ \\t\\n]{0,4}";

/** The GBNF grammar for a completion's answer text. */
export function buildAnswerGrammar(format: AnswerFormat, opts: AnswerGrammarOptions): string {
  const b = new GrammarBuilder(opts);
  const lead = b.rule("lead", LEAD);
  const call = markerGbnf(CML.CALL, opts.markerTokens);
  if (opts.awaiting === true && opts.allowCall) return b.render(`${lead} ( ${call} | ${markerGbnf(CML.TRAP, opts.markerTokens)} ${markerGbnf(CML.END, opts.markerTokens)} )`);
  const value = b.schema(format.type === "json_schema" ? normalizeSchema(format.schema) : { type: "object" }, "answer");
  const answer = `${value} ${lead}`;
  return b.render(opts.allowCall ? `${lead} ( ${call} | ${answer} )` : `${lead} ${answer}`);
}

/**
 * What the model is told of a required answer format (OpenAI, too, puts the
 * schema in the prompt): the grammar keeps the output valid, the
 * instruction lets the model fill it with the right content.
 */
export function answerInstruction(format: AnswerFormat): string {
  return format.type === "json_object"
    ? "Answer with one JSON object and nothing else."
    : `Answer with one JSON value that matches this JSON Schema, and nothing else:\n${JSON.stringify(format.schema)}`;
}
