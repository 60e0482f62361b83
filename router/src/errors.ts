/**
 * @module The router's HTTP errors: the shared ones of
 * `common/src/http-error.ts`, and the codes only the router sends.
 */
import { ErrorCode } from "../../common/src/index.js";

export { HttpError, badRequest, notFound, toHttpError, sendError } from "../../common/src/http-error.js";

/** Codes the router sends beyond the engine's. */
export const RouterCode = {
  NoEngine: ErrorCode.NoEngine,
  EngineLost: ErrorCode.EngineLost,
  Forbidden: ErrorCode.Forbidden,
  NotReady: ErrorCode.NotReady,
  /** Calls sent to a program that was closed or has ended (409). */
  ProgramClosed: "program_closed",
} as const;
