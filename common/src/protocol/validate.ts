/**
 * @module The protocol messages' validators, compiled once by the project's
 * one validator (`common/src/wire/validator.ts`). The codec parses bodies
 * through them; receivers get the typed message or one readable line (which
 * the runner sends back as an error result).
 */
import { compileSchema } from "../wire/validator.js";
import { kvEventSchema, type KvEvent } from "./kv-events.js";
import { callMessageSchema, interruptMessageSchema, resultMessageSchema, type CallMessage, type InterruptMessage, type ResultMessage } from "./messages.js";

export { compileSchema, describeErrors, validateArguments, type Validated } from "../wire/validator.js";

export const validateCallMessage = compileSchema<CallMessage>(callMessageSchema, "call");
export const validateResultMessage = compileSchema<ResultMessage>(resultMessageSchema, "result");
export const validateInterruptMessage = compileSchema<InterruptMessage>(interruptMessageSchema, "interrupt");
export const validateKvEvent = compileSchema<KvEvent>(kvEventSchema, "kvEvent");
