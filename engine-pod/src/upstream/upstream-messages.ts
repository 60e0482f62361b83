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

export function fromUpstreamCalls(calls: readonly UpstreamToolCall[]): CompletionResult["toolCalls"] {
  const used = new Set<string>();
  return calls.map((c, i) => {
    let id = c.id.replace(/[^A-Za-z0-9_]/g, "_");
    if (!/^[A-Za-z_]/.test(id) || used.has(id)) id = `call_${i + 1}`;
    used.add(id);
    let args: Record<string, unknown> = {};
    try {
      const parsed: unknown = c.function.arguments.trim() === "" ? {} : JSON.parse(c.function.arguments);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
    } catch {
      // Arguments that are not a JSON object become `{}`: the result type carries an object.
    }
    return { id, name: c.function.name, arguments: args };
  });
}
