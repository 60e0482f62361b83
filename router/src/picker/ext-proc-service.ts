/**
 * @module Envoy's external processing service
 * (`envoy.service.ext_proc.v3.ExternalProcessor`), loaded from the vendored
 * protos (`./proto`, a current envoy/data-plane-api) with
 * `@grpc/proto-loader`, and plain types of the message fields the picker
 * reads and writes. Names are camelCase throughout (`keepCase: false`):
 * protobuf.js defines `google.protobuf.Value` with camelCase fields whatever
 * the option, so a snake_case `string_value` would be dropped and Envoy
 * would receive empty metadata.
 */
import { fileURLToPath } from "node:url";
import { loadPackageDefinition, type GrpcObject, type ServiceDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

/** The proto root: beside this file in the sources and in `dist/` (the image copies it there). */
const PROTO_ROOT = fileURLToPath(new URL("./proto/", import.meta.url));

/** The ExternalProcessor service definition, for `server.addService`. */
export function externalProcessorService(): ServiceDefinition {
  const definition = loadSync("envoy/service/ext_proc/v3/external_processor.proto", {
    includeDirs: [PROTO_ROOT],
    keepCase: false,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
  });
  const pkg = loadPackageDefinition(definition) as unknown as { envoy: { service: { ext_proc: { v3: GrpcObject } } } };
  const ctor = pkg.envoy.service.ext_proc.v3["ExternalProcessor"] as unknown as { service: ServiceDefinition };
  return ctor.service;
}

/** `google.protobuf.Value` as protobuf.js reads and writes it (one field set). */
export interface PbValue {
  nullValue?: "NULL_VALUE" | 0;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: PbStruct;
  listValue?: { values?: PbValue[] };
}

export interface PbStruct {
  fields?: Record<string, PbValue>;
}

export interface HeaderValue {
  key: string;
  value?: string;
  rawValue?: Buffer;
}

export interface HttpHeaders {
  headers?: { headers?: HeaderValue[] };
  endOfStream?: boolean;
}

export interface HttpBody {
  body?: Buffer;
  endOfStream?: boolean;
}

/** What Envoy sends on the stream: one part of the HTTP exchange per message. */
export interface ProcessingRequest {
  request?: "requestHeaders" | "responseHeaders" | "requestBody" | "responseBody" | "requestTrailers" | "responseTrailers";
  requestHeaders?: HttpHeaders;
  responseHeaders?: HttpHeaders;
  requestBody?: HttpBody;
  responseBody?: HttpBody;
  requestTrailers?: { trailers?: { headers?: HeaderValue[] } };
  responseTrailers?: { trailers?: { headers?: HeaderValue[] } };
  /** Filter metadata Envoy forwards (`metadata_options.forwarding_namespaces`). */
  metadataContext?: { filterMetadata?: Record<string, PbStruct> };
}

export interface HeaderMutation {
  setHeaders?: { header: { key: string; rawValue: Buffer }; appendAction?: "OVERWRITE_IF_EXISTS_OR_ADD" }[];
  removeHeaders?: string[];
}

export interface CommonResponse {
  headerMutation?: HeaderMutation;
  bodyMutation?: { streamedResponse: { body: Buffer; endOfStream: boolean } };
  clearRouteCache?: boolean;
}

export interface ImmediateResponse {
  status: { code: number };
  headers?: HeaderMutation;
  body?: Buffer;
  details?: string;
}

/** What the picker answers, one per request message (or one immediate response). */
export interface ProcessingResponse {
  requestHeaders?: { response?: CommonResponse };
  responseHeaders?: { response?: CommonResponse };
  requestBody?: { response?: CommonResponse };
  responseBody?: { response?: CommonResponse };
  requestTrailers?: Record<string, never>;
  responseTrailers?: Record<string, never>;
  immediateResponse?: ImmediateResponse;
  /** Received by Envoy under `metadata_options.receiving_namespaces`. */
  dynamicMetadata?: PbStruct;
}
