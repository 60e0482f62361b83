/**
 * @module Reading Envoy's ext_proc messages and building the picker's
 * answers: header maps as plain records, filter metadata as JSON, the
 * endpoint-picker protocol's names (GAIE v1: `x-gateway-destination-endpoint`
 * in a header and under `dynamic_metadata["envoy.lb"]`, the subset hint under
 * `envoy.lb.subset_hint`, the served endpoint under `envoy.lb`), and bodies
 * streamed back in chunks Envoy accepts (`FULL_DUPLEX_STREAMED`).
 */
import { errorBody, type HttpError } from "../../../common/src/http-error.js";
import type { HeaderMutation, HeaderValue, PbStruct, PbValue, ProcessingRequest, ProcessingResponse } from "./ext-proc-service.js";

/** The endpoint-picker protocol's names (GAIE, proposal 004, v1.0.0). */
export const Gaie = {
  /** Header and `envoy.lb` metadata key of the picked endpoints: `ip:port[,ip:port...]`, best first. */
  DestinationEndpoint: "x-gateway-destination-endpoint",
  /** Metadata namespace of the picked (and served) endpoint. */
  DestinationNamespace: "envoy.lb",
  /** Metadata namespace of the subset the data plane allows. */
  SubsetNamespace: "envoy.lb.subset_hint",
  /** Key of the allowed endpoints in the subset namespace (a list, or comma-separated). */
  SubsetKey: "x-gateway-destination-endpoint-subset",
  /** Key under `envoy.lb` where the data plane reports the endpoint that served the request. */
  ServedKey: "x-gateway-destination-endpoint-served",
} as const;

/** Largest streamed body chunk sent back (Envoy recommends at most 64 KiB). */
export const BODY_CHUNK_BYTES = 62_000;

/** Header names lower-cased to their value (a repeated header's values joined with ","). */
export function headerRecord(headers: readonly HeaderValue[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of headers ?? []) {
    const key = h.key.toLowerCase();
    const value = h.rawValue !== undefined && h.rawValue.length > 0 ? h.rawValue.toString("utf8") : (h.value ?? "");
    out[key] = key in out ? `${out[key]},${value}` : value;
  }
  return out;
}

export function valueToJson(v: PbValue | undefined): unknown {
  if (v === undefined) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.numberValue !== undefined) return v.numberValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.structValue !== undefined) return structToJson(v.structValue);
  if (v.listValue !== undefined) return (v.listValue.values ?? []).map(valueToJson);
  return null;
}

export function structToJson(s: PbStruct | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s?.fields ?? {})) out[k] = valueToJson(v);
  return out;
}

export function jsonToValue(v: unknown): PbValue {
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(jsonToValue) } };
  if (v !== null && typeof v === "object") return { structValue: jsonToStruct(v as Record<string, unknown>) };
  return { nullValue: "NULL_VALUE" };
}

export function jsonToStruct(o: Record<string, unknown>): PbStruct {
  return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, jsonToValue(v)])) };
}

/** The request's filter metadata, by namespace, as JSON. */
export function filterMetadata(req: ProcessingRequest): Record<string, Record<string, unknown>> {
  return Object.fromEntries(Object.entries(req.metadataContext?.filterMetadata ?? {}).map(([ns, s]) => [ns, structToJson(s)]));
}

/**
 * The subset hint: the endpoints the data plane allows (`ip:port`, or a bare
 * IP meaning any port), or null when it sent none. An empty list is a hint
 * that allows nothing (the protocol's 503).
 */
export function subsetHint(metadata: Record<string, Record<string, unknown>>): string[] | null {
  const ns = metadata[Gaie.SubsetNamespace];
  if (ns === undefined || !(Gaie.SubsetKey in ns)) return null;
  const raw = ns[Gaie.SubsetKey];
  const items = Array.isArray(raw) ? raw : [raw];
  return items
    .filter((v): v is string => typeof v === "string")
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
}

/**
 * The endpoint the data plane reports it sent the request to: under
 * `envoy.lb` in the metadata (GAIE v1), or in a response header of the same
 * name (what a plain Envoy route can add: `%UPSTREAM_HOST%`).
 */
export function servedEndpoint(metadata: Record<string, Record<string, unknown>>, headers: Readonly<Record<string, string>>): string | undefined {
  const served = metadata[Gaie.DestinationNamespace]?.[Gaie.ServedKey] ?? headers[Gaie.ServedKey];
  return typeof served === "string" && served !== "" ? served : undefined;
}

export function headerMutation(set: Record<string, string>, remove: readonly string[] = []): HeaderMutation {
  return {
    setHeaders: Object.entries(set).map(([key, value]) => ({ header: { key, rawValue: Buffer.from(value) }, appendAction: "OVERWRITE_IF_EXISTS_OR_ADD" as const })),
    ...(remove.length > 0 ? { removeHeaders: [...remove] } : {}),
  };
}

/** The answer to the request headers that routes the request: the endpoints in the header and the `envoy.lb` metadata, same value. */
export function pickedResponse(endpoints: readonly string[], set: Record<string, string>, remove: readonly string[]): ProcessingResponse {
  const value = endpoints.join(",");
  return {
    requestHeaders: { response: { headerMutation: headerMutation({ ...set, [Gaie.DestinationEndpoint]: value }, remove), clearRouteCache: true } },
    dynamicMetadata: jsonToStruct({ [Gaie.DestinationNamespace]: { [Gaie.DestinationEndpoint]: value } }),
  };
}

/** `body` streamed back as request or response body chunks, the last one ending the stream when `end`. */
export function streamedBody(phase: "requestBody" | "responseBody", body: Buffer, end: boolean): ProcessingResponse[] {
  const out: ProcessingResponse[] = [];
  for (let at = 0; at < body.length || out.length === 0; at += BODY_CHUNK_BYTES) {
    const chunk = body.subarray(at, at + BODY_CHUNK_BYTES);
    const last = at + BODY_CHUNK_BYTES >= body.length;
    out.push({ [phase]: { response: { bodyMutation: { streamedResponse: { body: chunk, endOfStream: end && last } } } } });
  }
  return out;
}

/** An HTTP error answered by Envoy itself, in the body shape every Interlace component uses. */
export function immediateError(err: HttpError): ProcessingResponse {
  return {
    immediateResponse: {
      status: { code: err.status },
      headers: headerMutation({ "content-type": "application/json", ...err.headers }),
      body: Buffer.from(JSON.stringify(errorBody(err))),
      details: `interlace_picker_${err.code}`,
    },
  };
}

/** A JSON answer from the picker itself (an app's description). */
export function immediateJson(status: number, payload: unknown): ProcessingResponse {
  return { immediateResponse: { status: { code: status }, headers: headerMutation({ "content-type": "application/json" }), body: Buffer.from(JSON.stringify(payload)) } };
}
