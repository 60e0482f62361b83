/**
 * @module Relays a streamed engine response (server-sent events) to the
 * client byte for byte, with backpressure: the next chunk is read from the
 * engine only after the client's socket took the last one, so a slow client
 * slows the engine's stream instead of growing the router's memory. The
 * caller aborts the engine request when the client goes. Events are parsed on
 * the side to learn whether the stream ended properly; with `rewrite`, each
 * event is written again with its data rewritten (comments, the engine's
 * pings, pass through), with the same backpressure.
 */
import type { Response as ExpressResponse } from "express";
import { createParser, type EventSourceMessage } from "eventsource-parser";

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

export interface RelayOptions {
  /** Whether an event ends the stream properly; default: a `done` event or `[DONE]`. */
  ends?: (event: EventSourceMessage) => boolean;
  /** Each event's data as the client gets it; absent: bytes are relayed as they come. */
  rewrite?: (data: string) => string;
}

const endsByDefault = (e: EventSourceMessage): boolean => e.event === "done" || e.data === "[DONE]";

function frame(e: EventSourceMessage, data: string): string {
  let out = e.event !== undefined ? `event: ${e.event}\n` : "";
  if (e.id !== undefined) out += `id: ${e.id}\n`;
  for (const line of data.split("\n")) out += `data: ${line}\n`;
  return `${out}\n`;
}

export async function relayEventStream(body: ReadableStream<Uint8Array>, res: ExpressResponse, options: RelayOptions = {}): Promise<RelayOutcome> {
  const ends = options.ends ?? endsByDefault;
  const rewrite = options.rewrite;
  let completed = false;
  let rewritten = "";
  const parser = createParser({
    onEvent: (e) => {
      if (ends(e)) completed = true;
      if (rewrite !== undefined) rewritten += frame(e, rewrite(e.data));
    },
    onComment: (comment) => {
      if (rewrite !== undefined) rewritten += `:${comment}\n\n`;
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      if (res.destroyed || res.writableEnded) return { clientGone: true, completed };
      parser.feed(decoder.decode(chunk, { stream: true }));
      let out: Uint8Array | string = chunk;
      if (rewrite !== undefined) {
        out = rewritten;
        rewritten = "";
        if (out === "") continue;
      }
      if (!res.write(out)) await waitDrain(res);
    }
  } catch (error) {
    return { clientGone: res.destroyed, completed, error };
  }
  return { clientGone: false, completed };
}
