/**
 * @module The OpenAI-compatible endpoint's conversation, as the engine's
 * `CompletionRequest` carries it (assistant tool calls as CML call blocks in
 * the text, tool results with the id they answer), back into OpenAI messages
 * for an upstream; and the upstream's tool calls into `CompletionResult`
 * calls with identifier ids (the ids a client sends back in `tool` messages).
 */
import { CML, type ChatMessage } from "../../../common/src/index.js";
import type { CompletionResult } from "../engine/index.js";
import type { UpstreamMessage, UpstreamToolCall } from "./upstream-client.js";

const esc = (m: string): string => m.replace(/[[\]]/g, "\\$&");
const CALL_BLOCK = new RegExp(`${esc(CML.CALL)}\\s*([A-Za-z_][A-Za-z0-9_]*)\\s*${esc(CML.HEAD)}([\\s\\S]*?)${esc(CML.END)}`, "g");

export function toUpstreamConversation(messages: readonly (ChatMessage & { toolCallId?: string })[]): UpstreamMessage[] {
  return messages.map((m): UpstreamMessage => {
    if (m.role === "tool") return m.toolCallId !== undefined ? { role: "tool", content: m.content, tool_call_id: m.toolCallId } : { role: "user", content: m.content };
    if (m.role !== "assistant") return { role: m.role, content: m.content };
    const calls: UpstreamToolCall[] = [];
    const text = m.content.replace(CALL_BLOCK, (_all, id: string, body: string) => {
      try {
        const parsed = JSON.parse(body) as { name?: unknown; arguments?: unknown };
        if (typeof parsed.name === "string") {
          calls.push({ id, type: "function", function: { name: parsed.name, arguments: JSON.stringify(parsed.arguments ?? {}) } });
          return "";
        }
      } catch {
        // not a JSON call body: leave the text as it is
      }
      return _all;
    });
    // "" rather than null beside tool_calls: llama-cpp-python's server rejects a null assistant content.
    return { role: "assistant", content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
  });
}

/**
 * The identifier ids of a completion's upstream calls, each fixed the first
 * time it is asked for: a call streamed as it arrives keeps the id it was
 * announced with in the final result.
 */
export class UpstreamCallIds {
  private readonly ids = new Map<UpstreamToolCall, string>();
  private readonly used = new Set<string>();

  of(call: UpstreamToolCall): string {
    const known = this.ids.get(call);
    if (known !== undefined) return known;
    let id = call.id.replace(/[^A-Za-z0-9_]/g, "_");
    for (let n = this.ids.size + 1; !/^[A-Za-z_]/.test(id) || this.used.has(id); n++) id = `call_${n}`;
    this.ids.set(call, id);
    this.used.add(id);
    return id;
  }
}

/** An upstream call's arguments text as the object a result carries: text that is not a JSON object becomes `{}`. */
export function upstreamArguments(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = text.trim() === "" ? {} : JSON.parse(text);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // not JSON: as below
  }
  return {};
}

export function fromUpstreamCalls(calls: readonly UpstreamToolCall[], ids = new UpstreamCallIds()): CompletionResult["toolCalls"] {
  return calls.map((c) => ({ id: ids.of(c), name: c.function.name, arguments: upstreamArguments(c.function.arguments) }));
}
