/**
 * @module Errors of the operator runtime: a failed API call carries the HTTP
 * status and the API server's `Status.reason` so callers can branch on
 * NotFound / Conflict / Gone without parsing messages (the library's
 * `ApiException` carries only the code and the raw body).
 */

/** A non-2xx answer from the API server. */
export class KubeApiError extends Error {
  override readonly name = "KubeApiError";
  readonly code = "kube_api_error";
  constructor(
    /** HTTP status (404, 409, 410, 422, ...). */
    readonly status: number,
    /** `Status.reason` from the body when present (`NotFound`, `Conflict`, `Expired`, `Invalid`, ...). */
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
