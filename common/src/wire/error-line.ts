/**
 * @module The error line the model reads after `[HEAD]` when a call fails:
 * `error: <code>: <message>` on one line. Every executor, the tool runner and
 * the engine (calls that fail to parse or validate) write it through here,
 * so a model — or a client matching on it — sees one format whatever failed.
 */

/** A failure as data: a stable code (an `ErrorCode`) and a readable message. */
export interface Failure {
  code: string;
  message: string;
}

/** `error: <code>: <message>` on one line; a message that already starts with its code keeps it once. */
export function formatErrorLine(code: string, message: string): string {
  const body = message.startsWith(`${code}:`) ? message.slice(code.length + 1).trimStart() : message;
  return `error: ${code}: ${body.replace(/\s*\n\s*/g, " ")}`;
}

/** The failed-result fields every executor and the runner return: `ok: false`, the error line, the failure. */
export function errorOutcome(code: string, message: string): { ok: false; output: string; error: Failure } {
  return { ok: false, output: formatErrorLine(code, message), error: { code, message } };
}
