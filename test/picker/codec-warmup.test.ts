/**
 * The picker warms its ext_proc codecs at start-up with one round trip of
 * every message shape it reads and writes. The round trip must be lossless
 * for what Envoy acts on: the picked endpoints in both the header and the
 * `envoy.lb` metadata (protobuf.js drops `google.protobuf.Value` fields
 * given in snake_case, and Envoy would then see empty metadata), header
 * bytes, streamed body chunks with their end flag, immediate answers'
 * status and body, and the subset hint Envoy forwards.
 */
import t from "tap";
import { SAMPLE_REQUESTS, SAMPLE_RESPONSES, warmCodecs } from "../../router/src/picker/codec-warmup.js";
import { Gaie, filterMetadata, headerRecord, structToJson, subsetHint } from "../../router/src/picker/envoy-messages.js";
import { externalProcessorService } from "../../router/src/picker/ext-proc-service.js";

const { requests, responses } = warmCodecs(externalProcessorService());

t.test("every request phase comes back as the same phase, with the subset hint and the served endpoint", async (t) => {
  t.equal(requests.length, SAMPLE_REQUESTS.length);
  t.same(
    requests.map((r) => r.request),
    ["requestHeaders", "requestBody", "requestTrailers", "responseHeaders", "responseBody", "responseTrailers"],
  );
  const first = requests[0]!;
  t.equal(headerRecord(first.requestHeaders?.headers?.headers)[":path"], "/v1/chat/completions");
  const metadata = filterMetadata(first);
  t.same(subsetHint(metadata), ["10.0.0.1:8080"]);
  t.equal(metadata[Gaie.DestinationNamespace]?.[Gaie.ServedKey], "10.0.0.1:8080");
  t.equal(requests[1]!.requestBody?.body?.toString(), "{}");
  t.equal(requests[1]!.requestBody?.endOfStream, true);
});

t.test("the pick keeps its endpoints in the header and in envoy.lb; bodies, mutations and immediate answers survive", async (t) => {
  t.equal(responses.length, SAMPLE_RESPONSES.length);
  const pick = responses[0]!;
  const set = pick.requestHeaders?.response?.headerMutation?.setHeaders ?? [];
  const byKey = Object.fromEntries(set.map((h) => [h.header.key, Buffer.from(h.header.rawValue).toString()]));
  t.equal(byKey[Gaie.DestinationEndpoint], "10.0.0.1:8080,10.0.0.2:8080");
  t.equal(byKey["server-timing"], "pick;dur=0.1");
  t.same(pick.requestHeaders?.response?.headerMutation?.removeHeaders, ["content-length"]);
  t.equal(pick.requestHeaders?.response?.clearRouteCache, true);
  t.same(structToJson(pick.dynamicMetadata), { [Gaie.DestinationNamespace]: { [Gaie.DestinationEndpoint]: "10.0.0.1:8080,10.0.0.2:8080" } });
  const streamed = responses[1]!.requestBody?.response?.bodyMutation?.streamedResponse;
  t.equal(Buffer.from(streamed?.body ?? []).toString(), "{}");
  t.equal(streamed?.endOfStream, true);
  // The loader reads enums as their names (`enums: String`): Envoy's HttpStatus 503 is ServiceUnavailable.
  const immediate = responses.find((r) => String(r.immediateResponse?.status.code) === "ServiceUnavailable")?.immediateResponse;
  t.ok(immediate, "the 503 comes back");
  t.match(Buffer.from(immediate?.body ?? []).toString(), /warm-up/);
  t.equal(immediate?.details, "interlace_picker_not_ready");
});
