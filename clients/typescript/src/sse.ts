/**
 * @module Server-sent events from a fetch response body (the router's
 * program and session streams), parsed by `eventsource-parser`.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";

/** Each event of `body` (empty ones skipped), until the server ends the stream. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<EventSourceMessage> {
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => parsed.push(e) });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
      for (const e of parsed.splice(0)) if (e.data !== "") yield e;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
