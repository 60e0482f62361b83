/**
 * @module The answer grammar (OpenAI `response_format`): the text a
 * completion writes outside call blocks is one JSON value — any JSON object
 * (`json_object`) or a value of a JSON Schema (`json_schema`). Where the
 * completion may call tools, the text may open a call block instead: the
 * grammar admits `[CALL]` before the answer begins; the engine then hands the
 * block to the call grammar and drops this one (a turn that calls answers in
 * a later request).
 */
import { CML, type AnswerFormat, type CmlMarker } from "../../../common/src/index.js";
import { GrammarBuilder, markerGbnf, type JsonGrammarBounds } from "./json-grammar.js";
import { normalizeSchema } from "./schema.js";

export interface AnswerGrammarOptions extends JsonGrammarBounds {
  /** Marker control tokens (id → marker); markers not listed are spelled as literal text. */
  markerTokens?: ReadonlyMap<number, CmlMarker>;
  /** The completion has tools and may call one instead of answering. */
  allowCall: boolean;
}

/** Whitespace a model may write around the value (a newline after the turn's opening is common). */
const LEAD = "[ \\t\\n]{0,4}";

/** The GBNF grammar for a completion's answer text. */
export function buildAnswerGrammar(format: AnswerFormat, opts: AnswerGrammarOptions): string {
  const b = new GrammarBuilder(opts);
  const value = b.schema(format.type === "json_schema" ? normalizeSchema(format.schema) : { type: "object" }, "answer");
  const lead = b.rule("lead", LEAD);
  const answer = `${value} ${lead}`;
  return b.render(opts.allowCall ? `${lead} ( ${markerGbnf(CML.CALL, opts.markerTokens)} | ${answer} )` : `${lead} ${answer}`);
}
