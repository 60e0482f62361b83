/**
 * @module Every answer an OpenAI client gets, checked against OpenAI's
 * published schemas (openai-spec.ts) on its way to the client: a `fetch`
 * for the official SDK's `fetch` option that passes each response through
 * unchanged and records, per JSON body and per server-sent event, which
 * schema it was checked against and what, if anything, broke it. Streams
 * are checked event by event as they pass, so a client that cancels
 * mid-stream still has what it read checked.
 */
import { createParser } from "eventsource-parser";
import type { Test } from "tap";
import { specViolation, type SpecSchemaName } from "./openai-spec.js";

export interface ConformanceCheck {
  schema: SpecSchemaName;
  /** `METHOD /path`, and the event's place in its stream. */
  where: string;
  /** Null: the value is what the schema describes. */
  violation: string | null;
  value: unknown;
}

interface Endpoint {
  method: string;
  path: RegExp;
  /** The schema of a 2xx JSON body. */
  json: SpecSchemaName;
  /** The schema of one event's data, for a streamed answer. */
  event?: (data: unknown) => SpecSchemaName;
}

const isErrorFrame = (data: unknown): boolean => typeof data === "object" && data !== null && "error" in data;

/** The OpenAI endpoints Interlace serves (on the engine and under a router's `/v1/apps/{ns}/{app}`), by what they answer with. */
const ENDPOINTS: readonly Endpoint[] = [
  // An error after the headers went out is an in-band `{"error": ...}` frame, as OpenAI sends it.
  { method: "POST", path: /\/chat\/completions$/, json: "CreateChatCompletionResponse", event: (d) => (isErrorFrame(d) ? "ErrorResponse" : "CreateChatCompletionStreamResponse") },
  { method: "POST", path: /\/responses$/, json: "Response", event: () => "ResponseStreamEvent" },
  { method: "GET", path: /\/responses\/[^/]+$/, json: "Response" },
  { method: "DELETE", path: /\/responses\/[^/]+$/, json: "DeleteResponse" },
  { method: "POST", path: /\/responses\/[^/]+\/cancel$/, json: "Response" },
  { method: "GET", path: /\/responses\/[^/]+\/input_items$/, json: "ResponseItemList" },
];

function requestOf(input: string | URL | Request, init: RequestInit | undefined): { method: string; url: URL } {
  const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
  return { method: (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase(), url };
}

export class ConformanceRecorder {
  readonly checks: ConformanceCheck[] = [];

  /** A `fetch` for `new OpenAI({fetch})`: the real one, each answer of an OpenAI endpoint checked as it passes. */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    const { method, url } = requestOf(input, init);
    const endpoint = ENDPOINTS.find((e) => e.method === method && e.path.test(url.pathname));
    if (endpoint === undefined) return res;
    const where = `${method} ${url.pathname}`;
    const rebuilt = (body: ReadableStream<Uint8Array> | string): Response => new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    if (res.ok && endpoint.event !== undefined && res.body !== null && (res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      return rebuilt(res.body.pipeThrough(this.eventChecker(where, endpoint.event)));
    }
    const text = await res.text();
    this.checkText(res.ok ? endpoint.json : "ErrorResponse", `${where} (${res.status})`, text);
    return rebuilt(text);
  };

  /** Records a check of `value` against `schema`. */
  check(schema: SpecSchemaName, where: string, value: unknown): ConformanceCheck {
    const check = { schema, where, violation: specViolation(schema, value), value };
    this.checks.push(check);
    return check;
  }

  private checkText(schema: SpecSchemaName, where: string, text: string): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.checks.push({ schema, where, violation: `not JSON: ${text.slice(0, 200)}`, value: text });
      return;
    }
    this.check(schema, where, value);
  }

  /** Passes the stream's bytes through unchanged, checking each event's data (`[DONE]` ends a chat stream and is no JSON). */
  private eventChecker(where: string, schemaOf: (data: unknown) => SpecSchemaName): TransformStream<Uint8Array, Uint8Array> {
    let index = 0;
    const parser = createParser({
      onEvent: (event) => {
        const at = `${where} event ${index++}${event.event !== undefined ? ` (${event.event})` : ""}`;
        if (event.data === "[DONE]") return;
        let data: unknown;
        try {
          data = JSON.parse(event.data);
        } catch {
          this.checks.push({ schema: schemaOf(undefined), where: at, violation: `not JSON: ${event.data.slice(0, 200)}`, value: event.data });
          return;
        }
        this.check(schemaOf(data), at, data);
      },
    });
    const decoder = new TextDecoder();
    return new TransformStream({
      transform(chunk, controller) {
        parser.feed(decoder.decode(chunk, { stream: true }));
        controller.enqueue(chunk);
      },
    });
  }

  /** The checks that failed, from `since` (an earlier `checks.length`) on. */
  violations(since = 0): ConformanceCheck[] {
    return this.checks.slice(since).filter((c) => c.violation !== null);
  }

  /** Asserts that answers were checked from `since` on and none broke its schema; the count per schema goes in the message. */
  assertConforms(t: Test, since = 0): void {
    const checks = this.checks.slice(since);
    const counts = new Map<string, number>();
    for (const c of checks) counts.set(c.schema, (counts.get(c.schema) ?? 0) + 1);
    t.ok(checks.length > 0, "some answers were checked");
    t.same(
      this.violations(since).map((c) => `${c.where}: ${c.violation}`),
      [],
      `every answer conforms to OpenAI's published schemas (${[...counts].map(([s, n]) => `${n} ${s}`).join(", ")})`,
    );
  }
}
