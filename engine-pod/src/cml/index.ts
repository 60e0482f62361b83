/**
 * @module The CML module's public surface: the token monitor, call-body
 * parsing and validation, error interrupts, the call grammar and marker
 * token helpers. The engine imports only this file.
 */
export type { MonitorEvent, MonitorOptions, TokenMonitor, ParsedCall } from "./monitor-api.js";
export { createTokenMonitor } from "./token-monitor.js";
export { parseCallBody } from "./parse-call.js";
export { parsePythonCall, type PythonCall, type PythonCallResult } from "./python-call.js";
export { normalizeSchema, propertyOrder, resolveTypeAlias } from "./schema.js";
export { formatCallError, formatErrorInterrupt, type CallFailure } from "./call-errors.js";
export { buildCallGrammar, createCallGrammar, gbnfLiteral, markerGbnf, type CallGrammarOptions } from "./call-grammar.js";
export { answerInstruction, buildAnswerGrammar, type AnswerGrammarOptions } from "./answer-grammar.js";
export { findMarkerTokens, intrTokenId, intrLogitBias, createIntrTokenBias, INTR_LOGIT, type MarkerTokenInfo } from "./marker-tokens.js";
