/**
 * @module A policy view from transcript text: the call ids of
 * `[CALL] id [HEAD]` blocks and the ids of `[INTR] id [HEAD]` blocks. Used
 * when a request carries its history as text (async-naive restarts, OpenAI
 * clients), so a policy picks up where the previous request stopped.
 */
import type { PolicyView } from "./policy.js";

const CALL_RE = /\[CALL\]\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[HEAD\]/g;
const INTR_RE = /\[INTR\]\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[HEAD\]/g;

export function scanTranscript(text: string): { emittedCalls: Set<string>; injected: Set<string> } & PolicyView {
  const emittedCalls = new Set<string>();
  const injected = new Set<string>();
  for (const m of text.matchAll(CALL_RE)) emittedCalls.add(m[1]!);
  for (const m of text.matchAll(INTR_RE)) injected.add(m[1]!);
  return { emittedCalls, injected };
}
