/**
 * @module CML (Context Markup Language, AsyncLM §3): the marker strings and
 * the text forms of call, interrupt and trap blocks. The engine's token
 * monitor parses these incrementally; everything else formats them here.
 */

/** The five CML markers. In generated models each is one control token (GGUF type 3). */
export const CML = {
  CALL: "[CALL]",
  INTR: "[INTR]",
  TRAP: "[TRAP]",
  END: "[END]",
  HEAD: "[HEAD]",
} as const;

export type CmlMarker = (typeof CML)[keyof typeof CML];

export const CML_MARKERS: readonly CmlMarker[] = Object.values(CML);

/** `[CALL] body [END]` or, with an id, `[CALL] id [HEAD] body [END]`. */
export function formatCallBlock(body: string, id?: string): string {
  return id === undefined
    ? `${CML.CALL}${body}${CML.END}`
    : `${CML.CALL}${id}${CML.HEAD}${body}${CML.END}`;
}

/** `[INTR] id [HEAD] value [END]`: a tool result or a user/agent message delivered mid-stream. */
export function formatInterruptBlock(id: string, value: string): string {
  return `${CML.INTR}${id}${CML.HEAD}${value}${CML.END}`;
}

/** `[TRAP] [END]`: the model has nothing to do until its next interrupt. */
export function formatTrapBlock(): string {
  return `${CML.TRAP}${CML.END}`;
}
