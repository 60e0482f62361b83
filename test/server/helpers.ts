/**
 * @module Test helpers for the engine pod's HTTP API: start a real engine
 * pod (llama.cpp on the generated `test` model, in-process executor with the
 * builtin tools) on a free 127.0.0.1 port, and read server-sent events.
 */
import type { Test } from "tap";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { createLogger, parseArgv, type SessionEvent } from "../../common/src/index.js";
import { parseEnginePodOptions } from "../../engine-pod/src/config.js";
import { startEnginePod, type EnginePod } from "../../engine-pod/src/main.js";

export interface TestPod {
  pod: EnginePod;
  base: string;
}

/** Starts an engine pod with the given extra flags and stops it at teardown. */
export async function startTestPod(t: Test, flags: string[] = []): Promise<TestPod> {
  const options = parseEnginePodOptions({
    flags: parseArgv(["--model-preset", "test", "--port", "0", "--host", "127.0.0.1", "--sequences", "2", "--context-size", "2048", "--threads", "1", ...flags]),
    env: {},
  });
  const pod = await startEnginePod(options, createLogger("test", process.env["LOG_LEVEL"] ?? "warn"));
  t.teardown(() => pod.close());
  return { pod, base: `http://127.0.0.1:${pod.port}` };
}

export async function postJson(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}

/** Reads a `text/event-stream` response into frames; stops at `[DONE]` or the end of the body. */
export async function* sseFrames(res: Response): AsyncGenerator<EventSourceMessage> {
  if (res.body === null) return;
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => queue.push(e) });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) {
      const frame = queue.shift()!;
      yield frame;
      if (frame.data === "[DONE]") return;
    }
  }
}

/** Streams a session's events until `done` (or `until` returns true). */
export async function readSession(
  base: string,
  id: string,
  options: { until?: (e: SessionEvent) => boolean; onEvent?: (e: SessionEvent) => void | Promise<void>; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<SessionEvent[]> {
  const res = await fetch(`${base}/v1/sessions/${id}/events`, {
    headers: { accept: "text/event-stream", ...options.headers },
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  });
  if (!res.ok) throw new Error(`events: HTTP ${res.status} ${await res.text()}`);
  const events: SessionEvent[] = [];
  for await (const frame of sseFrames(res)) {
    const event = JSON.parse(frame.data) as SessionEvent;
    events.push(event);
    await options.onEvent?.(event);
    if (event.type === "done" || options.until?.(event) === true) break;
  }
  return events;
}

export function ofType<T extends SessionEvent["type"]>(events: SessionEvent[], type: T): Extract<SessionEvent, { type: T }>[] {
  return events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
}
