/**
 * @module Prefix hashes at semantic boundaries, shared by the engine (which
 * reports the prefixes it holds resident) and the router (which places a
 * session on the engine holding the longest of its prefixes). A request is
 * cut into segments — the system prompt, the tool block, then one segment
 * per user turn (a user message and the assistant/tool messages after it;
 * few-shot examples are such turns) — and hashed as a chain: each hash
 * covers its segment and every segment before it, so equal hashes mean
 * equal prefixes and the position of a hash in the chain is its length in
 * segments.
 */
import { createHash } from "node:crypto";
import type { ChatMessage } from "./session.js";
import type { ToolSpec } from "./tools.js";

/** What a prompt is made of, as the engine renders it. */
export interface PrefixInput {
  /** The conversation, system message first when there is one. */
  messages: readonly ChatMessage[];
  /** The tools the model is told about, in prompt order. */
  tools?: readonly Pick<ToolSpec, "name" | "description" | "parameters">[];
}

/** Hex digits kept per hash (64 bits: collisions are irrelevant at pool scale). */
const HASH_CHARS = 16;

/** JSON with object keys sorted, so equal tool schemas hash equally whatever their key order. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The segments of a prompt, in order, each a tagged string. */
export function prefixSegments(input: PrefixInput): string[] {
  const segments: string[] = [];
  let i = 0;
  const system: string[] = [];
  while (i < input.messages.length && input.messages[i]!.role === "system") system.push(input.messages[i++]!.content);
  if (system.length > 0) segments.push(`system\u0000${system.join("\u0000")}`);
  const tools = input.tools ?? [];
  if (tools.length > 0) {
    segments.push(`tools\u0000${stableJson(tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })))}`);
  }
  let turn: string[] = [];
  for (; i < input.messages.length; i++) {
    const m = input.messages[i]!;
    if (m.role === "user" && turn.length > 0) {
      segments.push(`turn\u0000${turn.join("\u0000")}`);
      turn = [];
    }
    turn.push(`${m.role}\u0001${m.content}`);
  }
  if (turn.length > 0) segments.push(`turn\u0000${turn.join("\u0000")}`);
  return segments;
}

/**
 * How many leading segments are the app's own (system prompt, tool block):
 * the part of the chain every session of an app shares.
 */
export function appSegmentCount(input: PrefixInput): number {
  return prefixSegments({ ...input, messages: leadingSystem(input.messages) }).length;
}

/** The system messages a conversation opens with. */
export function leadingSystem<M extends Pick<ChatMessage, "role">>(messages: readonly M[]): M[] {
  const first = messages.findIndex((m) => m.role !== "system");
  return (first < 0 ? messages : messages.slice(0, first)).slice();
}

/** The chain of prefix hashes: entry k covers segments 0..k. */
export function prefixHashChain(input: PrefixInput): string[] {
  return extendPrefixChain("", prefixSegments(input));
}

/**
 * Continues a chain whose last hash is `previous` ("" for none) with more
 * segments — how programs cut a prompt at its variable boundaries (Parrot's
 * PrefixHash) after the app's own system and tool segments.
 */
export function extendPrefixChain(previous: string, segments: readonly string[]): string[] {
  const chain: string[] = [];
  for (const segment of segments) {
    previous = createHash("sha256").update(previous).update("\u0002").update(segment).digest("hex").slice(0, HASH_CHARS);
    chain.push(previous);
  }
  return chain;
}

/**
 * How many leading entries of `chain` an engine holds, given the set of
 * hashes it reports resident (chained hashes make any resident entry imply
 * all before it, so the longest is found from the end).
 */
export function residentPrefixLength(chain: readonly string[], resident: { has(hash: string): boolean }): number {
  for (let k = chain.length; k > 0; k--) if (resident.has(chain[k - 1]!)) return k;
  return 0;
}

/** The messages of a session request: a string prompt becomes one user turn after the optional system text. */
export function sessionMessages(prompt: string | readonly ChatMessage[], system: string | undefined): ChatMessage[] {
  if (typeof prompt === "string") return [...(system !== undefined ? [{ role: "system" as const, content: system }] : []), { role: "user", content: prompt }];
  const hasSystem = prompt[0]?.role === "system";
  return !hasSystem && system !== undefined ? [{ role: "system", content: system }, ...prompt] : [...prompt];
}
