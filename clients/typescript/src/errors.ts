/**
 * @module Errors: the router's error answers keep their status and code; a
 * semantic variable whose call failed rejects with {@link CallFailedError},
 * naming the call where the failure started.
 */

/** The router answered with an error (`{"error": {"code", "message"}}`). */
export class InterlaceAPIError extends Error {
  override readonly name = "InterlaceAPIError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds to wait before retrying (429). */
    readonly retryAfter?: number,
  ) {
    super(`${status} ${code}: ${message}`);
  }

  /** The error a non-2xx response stands for. */
  static async from(res: Response): Promise<InterlaceAPIError> {
    const text = await res.text();
    let code = "http_error";
    let message = text;
    try {
      const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
      code = body.error?.code ?? code;
      message = body.error?.message ?? message;
    } catch {
      // not JSON: the text is the message
    }
    const retry = res.headers.get("retry-after");
    return new InterlaceAPIError(res.status, code, message, retry !== null ? Number(retry) : undefined);
  }
}

/** The value of `variable` will never come: call `call` failed (`failedInput`: the failed variable a dependent read). */
export class CallFailedError extends Error {
  override readonly name: string = "CallFailedError";
  constructor(
    readonly variable: string,
    readonly call: string,
    readonly code: string,
    readonly detail: string,
    readonly failedInput?: string,
  ) {
    super(`variable "${variable}": call "${call}" failed (${code}): ${detail}`);
  }
}

/** The program was cancelled before this value was produced. */
export class ProgramCancelledError extends CallFailedError {
  override readonly name = "ProgramCancelledError";
}
