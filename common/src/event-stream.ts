/**
 * @module The response head of a server-sent event stream, as the engine and
 * the router both send it: no caching, no proxy buffering, headers flushed at
 * once and Nagle off so each event leaves as it is written.
 */
import type { Response } from "express";

export function startEventStream(res: Response): void {
  res.status(200);
  res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
  res.setHeader("Cache-Control", "no-cache, no-transform");
  res.setHeader("Connection", "keep-alive");
  res.setHeader("X-Accel-Buffering", "no");
  res.flushHeaders();
  res.socket?.setNoDelay(true);
}
