/**
 * @module One ext_proc stream: one HTTP request through the data plane, in
 * `FULL_DUPLEX_STREAMED` body mode. The request's headers and body are held
 * until the body ends (the model, app and prompt are in it); then the picker
 * answers the headers (the endpoints in `x-gateway-destination-endpoint` and
 * under `dynamic_metadata["envoy.lb"]`, the path and credentials for the
 * engine) and streams the body back, rewritten when the app's spec was
 * merged in. Or it answers the request itself (an ImmediateResponse: the
 * client's error, 503 without a ready engine, 429 when it sheds). On the way
 * back it names the engine (`x-interlace-engine`), counts the engine's
 * acceptance or refusal toward placement (a completion's pick stops
 * counting when its answer ends: its work is over, whatever the engine's
 * next heartbeat says; a created session's counts until a heartbeat shows
 * it), gives the client routed session
 * ids where the engine's answer names its own (a created session, an
 * accepted interrupt, a cancel: small JSON bodies, buffered), and passes
 * every other response chunk through as it comes.
 */
import { ErrorCode, type CreateSessionRequest, type Logger } from "../../../common/src/index.js";
import { ADMISSION_HEADER, parseAdmission, PREFIX_ROLE_HEADER, prefixRoleOn } from "../../../common/src/protocol/index.js";
import { HttpError, toHttpError } from "../errors.js";
import { routedSessionId } from "../session-id.js";
import type { SessionOwners } from "../session-owner.js";
import type { WarmArrival } from "../prefix-warmer.js";
import { Gaie, filterMetadata, headerMutation, headerRecord, immediateError, immediateJson, pickedResponse, servedEndpoint, streamedBody, subsetHint } from "./envoy-messages.js";
import type { EndpointPicker, Pick } from "./endpoint-picker.js";
import type { ProcessingRequest, ProcessingResponse } from "./ext-proc-service.js";
import type { PickerMetrics } from "./metrics.js";
import { ENGINE_HEADER, type PickerRequest, type PickerRoute } from "./picker-request.js";
import { pickTiming } from "../server-timing.js";

export interface ExchangeContext {
  picker: EndpointPicker;
  /** The request's meaning (routeRequest bound to the apps and owners). */
  route(req: PickerRequest): PickerRoute;
  /** The principal of the request's `authorization` on the app it names (app-access.ts); throws the 401 or 403 to answer. */
  authenticate(req: Omit<PickerRequest, "principal">): string;
  owners: SessionOwners;
  /** The picker's `Authorization` towards engines, when they require one (asked per request: the key may rotate). */
  engineAuthorization?: () => string;
  maxBodyBytes: number;
  /** Null when ready, or why not (→ 503). */
  notReadyReason(): string | null;
  retryAfterSeconds: number;
  metrics: PickerMetrics;
  log: Logger;
  /** Hot-prefix warming (prefix-warmer.ts) on the picker's pool, told of each session an engine created (absent: off). */
  warmer?: { observe(arrival: Omit<WarmArrival, "pool">): void };
}

type Phase = "request" | "routed" | "answered";

export class ExtProcExchange {
  private phase: Phase = "request";
  private headers: Record<string, string> = {};
  private metadata: Record<string, Record<string, unknown>> = {};
  private readonly chunks: Buffer[] = [];
  private bodyBytes = 0;
  private route: PickerRoute | undefined;
  private pick: Pick | undefined;
  /** The pick's own time (the last body byte to the answer), told back to the client as `Server-Timing`. */
  private pickMs: number | undefined;
  private principal = "";
  /** Set when the engine's answer is buffered to give it routed ids. */
  private rewrite: ((raw: Buffer) => Buffer) | undefined;
  private readonly response: Buffer[] = [];
  private readonly abort = new AbortController();

  constructor(
    private readonly ctx: ExchangeContext,
    private readonly send: (response: ProcessingResponse) => void,
  ) {}

  /** Handles one message of the stream (called in order, one at a time). */
  async handle(msg: ProcessingRequest): Promise<void> {
    switch (msg.request) {
      case "requestHeaders": {
        this.headers = headerRecord(msg.requestHeaders?.headers?.headers);
        this.metadata = filterMetadata(msg);
        if (msg.requestHeaders?.endOfStream === true) await this.decide(false);
        return;
      }
      case "requestBody": {
        if (this.phase !== "request") return;
        const chunk = msg.requestBody?.body ?? Buffer.alloc(0);
        this.bodyBytes += chunk.length;
        if (this.bodyBytes > this.ctx.maxBodyBytes) {
          this.answer(new HttpError(413, ErrorCode.PayloadTooLarge, `request body exceeds the limit of ${this.ctx.maxBodyBytes} bytes (--max-body-bytes)`));
          return;
        }
        this.chunks.push(chunk);
        if (msg.requestBody?.endOfStream === true) await this.decide(true);
        return;
      }
      case "requestTrailers": {
        // Trailers end the body: route now, then let them through.
        if (this.phase === "request") await this.decide(true, true);
        if (this.phase === "routed") this.send({ requestTrailers: {} });
        return;
      }
      case "responseHeaders":
        return this.onResponseHeaders(msg);
      case "responseBody": {
        const body = msg.responseBody?.body ?? Buffer.alloc(0);
        const end = msg.responseBody?.endOfStream === true;
        if (end) this.answered();
        if (this.rewrite === undefined) {
          for (const r of streamedBody("responseBody", body, end)) this.send(r);
          return;
        }
        this.response.push(body);
        if (end) for (const r of streamedBody("responseBody", this.rewrite(Buffer.concat(this.response)), true)) this.send(r);
        return;
      }
      case "responseTrailers":
        this.answered();
        this.send({ responseTrailers: {} });
        return;
      case undefined:
        return;
    }
  }

  /** The stream ended or broke: a pick whose engine never answered no longer counts as taken, nor a completion whose answer was cut. */
  close(): void {
    this.abort.abort();
    if (this.isCompletion()) void this.pick?.reservation.finish();
    else this.pick?.reservation.release();
    if (this.phase === "request") this.ctx.metrics.streams.inc({ outcome: "aborted" });
  }

  /** Placed work that ends with its answer (a completion), unlike a created session, which runs on after it. */
  private isCompletion(): boolean {
    return this.route?.kind === "place" && this.route.session === undefined;
  }

  /** The engine's answer has ended: a completion's engine no longer runs it, so every front door stops counting it now. */
  private answered(): void {
    if (this.isCompletion()) void this.pick?.reservation.finish();
  }

  private answer(err: HttpError): void {
    this.phase = "answered";
    this.ctx.metrics.rejected.inc({ status: String(err.status) });
    this.ctx.metrics.streams.inc({ outcome: "answered" });
    if (err.status >= 500 && err.status !== 503) this.ctx.log.error({ err, path: this.headers[":path"] }, "request failed in the picker");
    else this.ctx.log.debug({ code: err.code, status: err.status, message: err.message, path: this.headers[":path"] }, "request answered by the picker");
    this.send(immediateError(err));
  }

  private async decide(hasBody: boolean, trailers = false): Promise<void> {
    const started = performance.now();
    try {
      const notReady = this.ctx.notReadyReason();
      if (notReady !== null) throw new HttpError(503, ErrorCode.NotReady, `endpoint picker not ready: ${notReady}`, { "Retry-After": String(this.ctx.retryAfterSeconds) });
      const raw = Buffer.concat(this.chunks);
      const request = { method: this.headers[":method"] ?? "GET", path: this.headers[":path"] ?? "/", headers: this.headers, ...parseJson(raw) };
      const principal = this.ctx.authenticate(request);
      this.principal = principal;
      const route = this.ctx.route({ ...request, principal });
      if (route.kind === "answer") {
        this.phase = "answered";
        this.ctx.metrics.streams.inc({ outcome: "answered" });
        this.send(immediateJson(route.status, route.payload));
        return;
      }
      const subset = subsetHint(this.metadata);
      // Counted as active before it is placed, so its first session already goes to its home.
      if (route.kind === "place" && (route.session?.appSegments ?? 0) > 0) this.ctx.picker.appArrived(route.affinityKey);
      const pick = route.kind === "place" ? await this.ctx.picker.place(route, subset, this.abort.signal) : this.ctx.picker.pinned(route.pod, subset, route.sessionId !== undefined ? `session "${route.sessionId}"` : `the request pinned to engine ${route.pod}`);
      if (this.abort.signal.aborted) return pick.reservation.release();
      this.route = route;
      this.pick = pick;
      this.phase = "routed";
      this.ctx.metrics.streams.inc({ outcome: "routed" });
      const body = route.body !== undefined ? Buffer.from(JSON.stringify(route.body)) : raw;
      const set: Record<string, string> = {};
      const remove: string[] = [];
      if (route.path !== undefined) set[":path"] = route.path;
      if (route.body !== undefined) set["content-type"] = "application/json";
      // The engine's prefix store keeps the app's prefix before replicas only on its home; a client's own value never passes.
      if (pick.home !== undefined) set[PREFIX_ROLE_HEADER] = prefixRoleOn(pick.pods[0], pick.home);
      else if (this.headers[PREFIX_ROLE_HEADER] !== undefined) remove.push(PREFIX_ROLE_HEADER);
      if (this.ctx.engineAuthorization !== undefined) set["authorization"] = this.ctx.engineAuthorization();
      else if (this.headers["authorization"] !== undefined) remove.push("authorization");
      if (route.body !== undefined && this.headers["content-length"] !== undefined) remove.push("content-length");
      this.send(pickedResponse(pick.endpoints, set, remove));
      this.pickMs = performance.now() - started;
      this.ctx.metrics.pickSeconds.observe(this.pickMs / 1000);
      if (hasBody) for (const r of streamedBody("requestBody", body, !trailers)) this.send(r);
    } catch (err) {
      if (this.abort.signal.aborted) return;
      this.answer(toHttpError(err, { retryAfterSeconds: this.ctx.retryAfterSeconds }));
    }
  }

  private onResponseHeaders(msg: ProcessingRequest): void {
    const headers = headerRecord(msg.responseHeaders?.headers?.headers);
    const status = Number(headers[":status"] ?? "0");
    const served = servedEndpoint(filterMetadata(msg), headers);
    const pick = this.pick;
    const pod = (served !== undefined ? this.ctx.picker.podAt(served) : undefined) ?? pick?.pods[0];
    // The engine took the request (2xx-4xx but a refusal) or refused it (429/503, unreachable): what placement counts next.
    if (pick !== undefined) {
      if (status >= 200 && status < 400 && (served === undefined || served === pick.endpoints[0])) pick.reservation.confirm(parseAdmission(headers[ADMISSION_HEADER]));
      else pick.reservation.release();
      if (msg.responseHeaders?.endOfStream === true) this.answered();
    }
    const route = this.route;
    if (msg.responseHeaders?.endOfStream !== true && pod !== undefined && route !== undefined) {
      if (route.kind === "place" && route.session !== undefined && status === 201) {
        this.rewrite = (raw) => this.createdSession(raw, pod);
        const { app, appSegments } = route.session;
        this.ctx.warmer?.observe({ app: `${app.namespace}/${app.name}`, chain: route.chain, affinityKey: route.affinityKey, appSegments, body: route.body as CreateSessionRequest });
      }
      else if (route.kind === "pinned" && route.routeAnswerIds === true && route.sessionId !== undefined && status >= 200 && status < 300) {
        const id = route.sessionId;
        this.rewrite = (raw) => withRoutedIds(raw, id, pod);
      }
    }
    // The served endpoint is the data plane's note to the picker, not the client's business.
    const remove = headers[Gaie.ServedKey] !== undefined ? [Gaie.ServedKey] : [];
    const set: Record<string, string> = {};
    if (pod !== undefined) set[ENGINE_HEADER] = pod;
    if (this.pickMs !== undefined) set["server-timing"] = pickTiming(this.pickMs);
    this.send({ responseHeaders: { response: { headerMutation: headerMutation(set, remove) } } });
  }

  /** A created session's answer with the routed id (owner-tagged as the router tags it) and the app-level events URL. */
  private createdSession(raw: Buffer, served: string): Buffer {
    const route = this.route;
    const created = jsonObject(raw);
    if (route?.kind !== "place" || route.session === undefined || typeof created?.["id"] !== "string") return raw;
    const base = routedSessionId(served, created["id"]);
    const id = routedSessionId(served, created["id"], this.ctx.owners.tag(base, this.principal));
    const { namespace, name } = route.session.app;
    return Buffer.from(
      JSON.stringify({
        id,
        eventsUrl: `/v1/apps/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/sessions/${id}/events`,
        engine: served,
        placement: { reason: this.pick!.reason, matchedSegments: this.pick!.matched, segments: route.session.segments, retries: 0 },
      }),
    );
  }
}

function jsonObject(raw: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(raw.toString("utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** An engine's answer about a session (an accepted interrupt, a cancel) with the routed id the client knows, as the router answers. */
function withRoutedIds(raw: Buffer, routedId: string, pod: string): Buffer {
  const body = jsonObject(raw);
  if (body === undefined) return raw;
  if ("sessionId" in body) return Buffer.from(JSON.stringify({ ...body, sessionId: routedId, engine: pod }));
  if ("id" in body) return Buffer.from(JSON.stringify({ ...body, id: routedId }));
  return raw;
}

/** The body as JSON, or why it is not (routes that need JSON refuse it with that reason; others pass it through). */
function parseJson(raw: Buffer): { body: unknown; invalidJson?: string } {
  if (raw.length === 0) return { body: undefined };
  try {
    return { body: JSON.parse(raw.toString("utf8")) };
  } catch (err) {
    return { body: undefined, invalidJson: (err as Error).message };
  }
}
