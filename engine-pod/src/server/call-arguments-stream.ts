/**
 * @module One call's arguments while the model writes them. The body of a
 * JSON call (`{"name": "f", "arguments": {...}}`) arrives in pieces; once the
 * name and the `"arguments":` key have passed, the arguments stream out as
 * deltas, holding back what may be the call object's closing brace. The
 * deltas concatenate to the arguments exactly as the model wrote them. A
 * body of another shape (a Python-style call) streams nothing: its arguments
 * come whole at the end. A backend that streams the arguments apart from the
 * name (an upstream's `tool_calls`) pushes them bare: nothing is held back.
 */
const NAME = /^\s*\{\s*"name"\s*:\s*"([^"\\]*)"\s*,\s*"arguments"\s*:\s*/;

export class CallArgumentsStream {
  private body = "";
  /** Where the arguments begin in `body` (-1: not yet), and how far they were sent. */
  private start = -1;
  private sent = 0;
  /** The body is the arguments alone (`pushArguments`): no call object around them. */
  private bare = false;
  /** The function's name, once the body has named it. */
  name: string | undefined;

  /** Adds body text; returns the arguments text that can go out now ("" when none). */
  push(text: string): string {
    this.body += text;
    if (this.start < 0) {
      const m = NAME.exec(this.body);
      if (m === null) return "";
      this.name = m[1];
      this.start = this.sent = m[0].length;
    }
    // Trailing whitespace and braces may be the end of the call object: held until more text follows.
    let end = this.body.length;
    while (end > this.sent && /[\s}]/.test(this.body[end - 1]!)) end--;
    return this.take(end);
  }

  /** Adds a piece of the arguments themselves, the name already known; returns it (all of it can go out now). */
  pushArguments(name: string, text: string): string {
    if (this.start < 0) {
      this.name = name;
      this.bare = true;
      this.start = this.sent = this.body.length;
    }
    this.body += text;
    return this.take(this.body.length);
  }

  /**
   * At the call's end, given the arguments the engine parsed: the last delta
   * to send, and the arguments as the deltas spell them. A body streamed in
   * another shape, or not at all, sends them whole as JSON instead.
   */
  finish(parsed: Record<string, unknown>): { delta: string; final: string } {
    if (this.start >= 0) {
      const body = this.body.trimEnd();
      const close = !this.bare && body.endsWith("}") ? body.length - 1 : body.length;
      const delta = this.take(this.start + this.body.slice(this.start, close).trimEnd().length);
      if (sameJson(this.streamed, parsed)) return { delta, final: this.streamed };
    }
    const whole = JSON.stringify(parsed);
    return { delta: this.streamed === "" ? whole : "", final: whole };
  }

  /** The arguments text sent so far: every delta, concatenated. */
  get streamed(): string {
    return this.start < 0 ? "" : this.body.slice(this.start, this.sent);
  }

  private take(end: number): string {
    if (end <= this.sent) return "";
    const delta = this.body.slice(this.sent, end);
    this.sent = end;
    return delta;
  }
}

/** Whether `text` is JSON for `value` (key order as written). */
function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}
