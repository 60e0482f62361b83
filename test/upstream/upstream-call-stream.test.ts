/**
 * @module An upstream's streamed tool calls as the engine's call stream: each
 * call opens at its first delta, its arguments go out as they come once it is
 * named, and it ends with the arguments the completion's result carries (and
 * the same id).
 */
import t from "tap";
import type { CallStreamEvent } from "../../engine-pod/src/engine/index.js";
import type { UpstreamToolCall } from "../../engine-pod/src/upstream/upstream-client.js";
import { UpstreamCallStream } from "../../engine-pod/src/upstream/upstream-call-stream.js";
import { fromUpstreamCalls, UpstreamCallIds } from "../../engine-pod/src/upstream/upstream-messages.js";

/** Feeds deltas as an upstream's chunks would add them: [call index, id, name, arguments piece]. */
function relay(deltas: [number, string, string, string][]): { events: CallStreamEvent[]; calls: UpstreamToolCall[]; ids: UpstreamCallIds } {
  const ids = new UpstreamCallIds();
  const events: CallStreamEvent[] = [];
  const stream = new UpstreamCallStream(ids, (e) => events.push(e));
  const calls: UpstreamToolCall[] = [];
  for (const [index, id, name, piece] of deltas) {
    const call = (calls[index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
    if (id !== "") call.id = id;
    call.function.name += name;
    call.function.arguments += piece;
    stream.update(call);
  }
  stream.finish();
  return { events, calls, ids };
}

t.test("two calls, streamed in pieces: open, argument pieces, done, then the next", async (t) => {
  const { events, calls, ids } = relay([
    [0, "call-a", "get_time", ""],
    [0, "", "", '{"city":'],
    [0, "", "", ' "Paris"}'],
    [1, "call-b", "echo", '{"te'],
    [1, "", "", 'xt": "hi"}'],
  ]);
  t.same(events, [
    { type: "open", id: "call_a" },
    { type: "arguments", id: "call_a", name: "get_time", text: '{"city":' },
    { type: "arguments", id: "call_a", name: "get_time", text: ' "Paris"}' },
    { type: "done", id: "call_a", name: "get_time", arguments: { city: "Paris" } },
    { type: "open", id: "call_b" },
    { type: "arguments", id: "call_b", name: "echo", text: '{"te' },
    { type: "arguments", id: "call_b", name: "echo", text: 'xt": "hi"}' },
    { type: "done", id: "call_b", name: "echo", arguments: { text: "hi" } },
  ]);
  t.same(
    fromUpstreamCalls(calls, ids).map((c) => c.id),
    ["call_a", "call_b"],
    "the result's ids are the ones the stream announced",
  );
});

t.test("arguments that arrive before the name wait for it; arguments that are not an object end as {}", async (t) => {
  const { events } = relay([
    [0, "", "", '["a"'],
    [0, "", "f", "]"],
  ]);
  t.same(events, [
    { type: "open", id: "call_1" },
    { type: "arguments", id: "call_1", name: "f", text: '["a"]' },
    { type: "done", id: "call_1", name: "f", arguments: {} },
  ]);
});
