/**
 * @module Warms the ext_proc codecs before the picker takes streams.
 * protobuf.js generates each message type's encoder, decoder and object
 * converters the first time a message of that type passes through, and
 * grpc-js serialises through them: without this, the first requests after
 * a (re)start pay for that code generation inside their pick (measured:
 * the first seven picks through Envoy took 1–18 ms against 0.7–0.9 ms
 * after). One round trip of every message shape the picker reads and
 * writes moves that cost to start-up, before readiness.
 */
import type { ServiceDefinition } from "@grpc/grpc-js";
import { HttpError } from "../errors.js";
import { ErrorCode } from "../../../common/src/index.js";
import { Gaie, headerMutation, immediateError, immediateJson, jsonToStruct, pickedResponse, streamedBody } from "./envoy-messages.js";
import type { ProcessingRequest, ProcessingResponse } from "./ext-proc-service.js";

const headers = { headers: { headers: [{ key: ":path", rawValue: Buffer.from("/v1/chat/completions") }] } };
const body = { body: Buffer.from("{}"), endOfStream: true };

/** Every request shape Envoy sends the picker: each phase, and forwarded metadata with a subset hint. */
export const SAMPLE_REQUESTS: readonly ProcessingRequest[] = [
  { requestHeaders: headers, metadataContext: { filterMetadata: { [Gaie.SubsetNamespace]: jsonToStruct({ [Gaie.SubsetKey]: ["10.0.0.1:8080"] }), [Gaie.DestinationNamespace]: jsonToStruct({ [Gaie.ServedKey]: "10.0.0.1:8080" }) } } },
  { requestBody: body },
  { requestTrailers: { trailers: headers.headers } },
  { responseHeaders: { ...headers, endOfStream: false } },
  { responseBody: body },
  { responseTrailers: { trailers: headers.headers } },
];

/** Every answer shape the picker writes: a pick, streamed bodies, header mutations, immediate answers, trailers. */
export const SAMPLE_RESPONSES: readonly ProcessingResponse[] = [
  pickedResponse(["10.0.0.1:8080", "10.0.0.2:8080"], { "server-timing": "pick;dur=0.1" }, ["content-length"]),
  ...streamedBody("requestBody", body.body, true),
  ...streamedBody("responseBody", body.body, true),
  { responseHeaders: { response: { headerMutation: headerMutation({ "x-interlace-engine": "engine-0" }, [Gaie.ServedKey]) } } },
  immediateError(new HttpError(503, ErrorCode.NotReady, "warm-up", { "Retry-After": "1" })),
  immediateJson(200, { warm: true }),
  { requestTrailers: {} },
  { responseTrailers: {} },
];

/**
 * Round-trips every sample through the service's serialisers, both ways,
 * and returns what came back (the caller may check it; start-up only needs
 * the side effect of the generated code).
 */
export function warmCodecs(service: ServiceDefinition): { requests: ProcessingRequest[]; responses: ProcessingResponse[] } {
  const process = service["Process"];
  if (process === undefined) throw new Error("the ext_proc service definition has no Process method");
  return {
    requests: SAMPLE_REQUESTS.map((r) => process.requestDeserialize(process.requestSerialize(r)) as ProcessingRequest),
    responses: SAMPLE_RESPONSES.map((r) => process.responseDeserialize(process.responseSerialize(r)) as ProcessingResponse),
  };
}
