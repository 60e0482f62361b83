/**
 * @module The engine's HTTP errors: the shared ones of
 * `common/src/http-error.ts`, under the names the engine's routes use.
 */
import { ErrorCode } from "../../../common/src/index.js";

export { HttpError, toHttpError, errorBody, sendError, type ErrorContext } from "../../../common/src/http-error.js";

/** A session that already finished cannot take interrupts (409). */
export const SESSION_FINISHED = ErrorCode.SessionFinished;
/** The engine is still loading its model or shutting down (503). */
export const NOT_READY = ErrorCode.NotReady;
