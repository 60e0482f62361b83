/**
 * @module A minimal server-sent events writer over an express response:
 * the headers that keep proxies from buffering, `event`/`id`/`data` frames,
 * comment pings that keep idle connections open, and close detection.
 */
import { startEventStream } from "../../../common/src/event-stream.js";
import type { Request, Response } from "express";

export interface SseStream {
  /** Writes one frame; `data` is JSON-encoded unless it is already a string. */
  send(data: unknown, options?: { event?: string; id?: string | number }): void;
  /** Ends the stream (idempotent). */
  end(): void;
  /** True once the client went away or {@link end} was called. */
  readonly closed: boolean;
  /** Runs when the client disconnects before {@link end}. */
  onClientClose(listener: () => void): void;
}

export function openSse(req: Request, res: Response, pingMs = 15_000): SseStream {
  startEventStream(res);
  let ended = false;
  let clientGone = false;
  const listeners: (() => void)[] = [];
  const ping = setInterval(() => {
    if (!ended) res.write(": ping\n\n");
  }, pingMs);
  ping.unref();
  res.on("close", () => {
    clearInterval(ping);
    if (!ended) {
      clientGone = true;
      ended = true;
      for (const l of listeners) l();
    }
  });
  return {
    send(data, options = {}) {
      if (ended) return;
      let frame = "";
      if (options.event !== undefined) frame += `event: ${options.event}\n`;
      if (options.id !== undefined) frame += `id: ${options.id}\n`;
      const text = typeof data === "string" ? data : JSON.stringify(data);
      for (const line of text.split("\n")) frame += `data: ${line}\n`;
      res.write(`${frame}\n`);
    },
    end() {
      if (ended) return;
      ended = true;
      clearInterval(ping);
      res.end();
    },
    get closed() {
      return ended || clientGone;
    },
    onClientClose(listener) {
      listeners.push(listener);
    },
  };
}
