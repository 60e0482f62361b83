/**
 * @module Errors of the operator runtime: a failed API call carries the HTTP
 * status and the API server's `Status.reason` so callers can branch on
 * NotFound / Conflict / Gone without parsing messages.
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

/** True when `err` is an API error with the given HTTP status. */
export function isStatus(err: unknown, status: number): err is KubeApiError {
  return err instanceof KubeApiError && err.status === status;
}

export const isNotFound = (err: unknown): err is KubeApiError => isStatus(err, 404);
export const isConflict = (err: unknown): err is KubeApiError => isStatus(err, 409);
/** 410 Gone: the resource version asked for has been compacted away; relist. */
export const isGone = (err: unknown): err is KubeApiError => isStatus(err, 410);
