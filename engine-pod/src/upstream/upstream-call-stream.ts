/**
 * @module An upstream completion's tool calls as the engine's call stream
 * (`CompletionRequest.onCallStream`), relayed as the upstream streams them: a
 * call opens at its first delta, its arguments go out piece by piece once it
 * is named, and it ends when the next call begins (upstreams send calls one
 * after another, in index order) or when the stream ends. It ends with the
 * arguments the completion's result carries for it (`upstreamArguments`), so
 * what a route sends last agrees with the result.
 */
import type { CallStreamEvent } from "../engine/index.js";
import type { UpstreamToolCall } from "./upstream-client.js";
import { upstreamArguments, type UpstreamCallIds } from "./upstream-messages.js";

export class UpstreamCallStream {
  /** Open calls, in the order they began, with how much of their arguments text went out. */
  private readonly open = new Map<UpstreamToolCall, number>();
  private readonly ended = new Set<UpstreamToolCall>();

  constructor(
    private readonly ids: UpstreamCallIds,
    private readonly emit: (event: CallStreamEvent) => void,
  ) {}

  /** A tool-call delta from the upstream was added to `call`. */
  update(call: UpstreamToolCall): void {
    // A piece of a call already ended (out of order: no upstream we know of sends one) stays in the result only.
    if (this.ended.has(call)) return;
    let sent = this.open.get(call);
    if (sent === undefined) {
      this.finish();
      this.open.set(call, (sent = 0));
      this.emit({ type: "open", id: this.ids.of(call) });
    }
    // The arguments go out once the call is named (its first delta names it on every upstream we know of).
    const text = call.function.arguments.slice(sent);
    if (text === "" || call.function.name === "") return;
    this.open.set(call, call.function.arguments.length);
    this.emit({ type: "arguments", id: this.ids.of(call), name: call.function.name, text });
  }

  /** Ends the open calls: a new one began, or the upstream finished. */
  finish(): void {
    for (const call of this.open.keys()) {
      this.ended.add(call);
      this.emit({ type: "done", id: this.ids.of(call), name: call.function.name, arguments: upstreamArguments(call.function.arguments) });
    }
    this.open.clear();
  }
}
