/**
 * @module Interlace's TypeScript client: Parrot-style programs of semantic
 * functions defined in code, whose variables are futures the router resolves
 * as a DAG; sessions with their event stream, user interrupts and cached tool
 * outputs.
 */
export { Interlace, type InterlaceOptions } from "./client.js";
export { CallFailedError, InterlaceAPIError, ProgramCancelledError } from "./errors.js";
export { appFunction, semanticFunction, type FunctionDefinition, type OutputSettings, type Placeholders, type SemanticFunction, type SemanticFunctionSpec } from "./functions.js";
export { Program, SemanticVariable, type Criteria, type Input, type ProgramEvent, type ProgramStatus } from "./program.js";
export { Session, type InterruptAccepted, type SessionEvent, type SessionRequest, type ToolOutput } from "./session.js";
