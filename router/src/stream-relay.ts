/**
 * @module Relays a streamed engine response (server-sent events) to the
 * client byte for byte, with backpressure: the next chunk is read from the
 * engine only after the client's socket took the last one, so a slow client
 * slows the engine's stream instead of growing the router's memory. The
 * caller aborts the engine request when the client goes. Events are parsed on
 * the side only to learn whether the stream ended properly.
 */
import type { Response as ExpressResponse } from "express";
import { createParser } from "eventsource-parser";

export interface RelayOutcome {
  /** The client went away before the stream ended. */
  clientGone: boolean;
  /** The engine's stream ended normally (a `done` event, or `[DONE]`). */
  completed: boolean;
  /** The engine's stream broke (connection reset, engine killed, aborted). */
  error?: unknown;
}

function waitDrain(res: ExpressResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

export async function relayEventStream(body: ReadableStream<Uint8Array>, res: ExpressResponse): Promise<RelayOutcome> {
  let completed = false;
  const parser = createParser({
    onEvent: (e) => {
      if (e.event === "done" || e.data === "[DONE]") completed = true;
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      if (res.destroyed || res.writableEnded) return { clientGone: true, completed };
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (!res.write(chunk)) await waitDrain(res);
    }
  } catch (error) {
    return { clientGone: res.destroyed, completed, error };
  }
  return { clientGone: false, completed };
}
