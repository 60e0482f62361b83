/**
 * @module A typed HTTP client for the session API — an engine's
 * (`/v1/sessions`) or an AgentApp's at the router
 * (`/v1/apps/{namespace}/{app}/sessions`, {@link SessionClient.forApp}): open a
 * session, stream its server-sent events, post interrupts, cancel. Used by the
 * demo, the benchmarks and end-to-end tests.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { CreateSessionRequest, PostInterruptRequest, SessionEvent } from "./session.js";

export class SessionApiError extends Error {
  override readonly name = "SessionApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function failure(res: Response): Promise<SessionApiError> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    return new SessionApiError(res.status, body.error?.code ?? "http_error", body.error?.message ?? text);
  } catch {
    return new SessionApiError(res.status, "http_error", text);
  }
}

/** Reads a `text/event-stream` body and yields each event's parsed JSON data. */
export async function* readEventStream<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => queue.push(event) });
  const decoder = new TextDecoder();
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) {
      const event = queue.shift()!;
      if (event.data === "[DONE]") return;
      yield JSON.parse(event.data) as T;
    }
  }
}

export class SessionClient {
  private readonly sessionsUrl: string;

  /** `baseUrl`: an engine pod's address; `sessionsPath`: where its sessions live. */
  constructor(baseUrl: string, sessionsPath = "/v1/sessions") {
    this.sessionsUrl = `${baseUrl.replace(/\/$/, "")}${sessionsPath}`;
  }

  /** The sessions of AgentApp `namespace/app`, through the router at `routerUrl`. */
  static forApp(routerUrl: string, namespace: string, app: string): SessionClient {
    return new SessionClient(routerUrl, `/v1/apps/${encodeURIComponent(namespace)}/${encodeURIComponent(app)}/sessions`);
  }

  async create(request: CreateSessionRequest): Promise<{ id: string }> {
    const res = await fetch(this.sessionsUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
    });
    if (!res.ok) throw await failure(res);
    return (await res.json()) as { id: string };
  }

  /** Streams the session's events (past ones first); ends after `done`. */
  async *events(id: string, signal?: AbortSignal): AsyncGenerator<SessionEvent> {
    const res = await fetch(`${this.sessionsUrl}/${encodeURIComponent(id)}/events`, {
      headers: { accept: "text/event-stream" },
      ...(signal !== undefined ? { signal } : {}),
    });
    if (!res.ok || res.body === null) throw await failure(res);
    for await (const event of readEventStream<SessionEvent>(res.body)) {
      yield event;
      if (event.type === "done") return;
    }
  }

  async interrupt(id: string, request: PostInterruptRequest): Promise<void> {
    const res = await fetch(`${this.sessionsUrl}/${encodeURIComponent(id)}/interrupts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
    });
    if (!res.ok) throw await failure(res);
  }

  async cancel(id: string): Promise<void> {
    const res = await fetch(`${this.sessionsUrl}/${encodeURIComponent(id)}`, { method: "DELETE" });
    if (!res.ok && res.status !== 404) throw await failure(res);
  }

  /** Opens a session and collects all its events. */
  async run(request: CreateSessionRequest, onEvent?: (event: SessionEvent, id: string) => void): Promise<SessionEvent[]> {
    const { id } = await this.create(request);
    const events: SessionEvent[] = [];
    for await (const event of this.events(id)) {
      events.push(event);
      onEvent?.(event, id);
    }
    return events;
  }
}
