/**
 * The conformance check itself (test/helpers/openai-spec.ts and
 * openai-conformance.ts): OpenAI's own examples pass it; a missing required
 * field, a wrong type or a value outside an enum fails it, named by its JSON
 * path; what the spec makes nullable may be null and nothing more. And the
 * `fetch` the SDK is given records those failures for answers the SDK itself
 * accepts without complaint: a server (plain node:http) that answers out of
 * spec is caught, JSON and stream alike.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import t from "tap";
import { ConformanceRecorder } from "../helpers/openai-conformance.js";
import { SPEC, specViolation } from "../helpers/openai-spec.js";

const completion = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "hi", refusal: null }, logprobs: null, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
};
const chunk = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1_700_000_000, model: "m", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: null }] };
const textDelta = { type: "response.output_text.delta", sequence_number: 3, item_id: "msg_1", output_index: 0, content_index: 0, delta: "hi", logprobs: [] };

t.test("the vendored subset names its upstream", async (t) => {
  t.equal(SPEC.source.repository, "https://github.com/openai/openai-openapi");
  t.match(SPEC.source.commit, /^[0-9a-f]{40}$/);
  t.equal(SPEC.source.openapi, "3.1.0");
});

t.test("OpenAI's own examples of a chat completion and an input-item list conform", async (t) => {
  for (const name of ["CreateChatCompletionResponse", "ResponseItemList"] as const) {
    const example = (SPEC.components.schemas[name] as { "x-oaiMeta": { example: string } })["x-oaiMeta"].example;
    t.equal(specViolation(name, JSON.parse(example)), null, name);
  }
  t.equal(specViolation("DeleteResponse", SPEC.examples.deleteResponse), null, "the delete example");
});

t.test("conforming values pass; nullable fields take null", async (t) => {
  t.equal(specViolation("CreateChatCompletionResponse", completion), null);
  t.equal(specViolation("CreateChatCompletionStreamResponse", chunk), null, "finish_reason null (OpenAPI 3.0 nullable)");
  t.equal(specViolation("CreateChatCompletionStreamResponse", { ...chunk, choices: [], usage: null }), null, "usage null beside a $ref");
  t.equal(specViolation("ResponseStreamEvent", textDelta), null);
  t.equal(specViolation("ErrorResponse", { error: { message: "bad", type: "invalid_request_error", param: null, code: null } }), null);
});

t.test("what breaks the spec fails, named by its path", async (t) => {
  const message = { role: "assistant", content: "hi" };
  t.match(specViolation("CreateChatCompletionResponse", { ...completion, choices: [{ ...completion.choices[0], message }] }), /"choices\[0\]\.message" must have required property 'refusal'/);
  t.match(specViolation("CreateChatCompletionResponse", { ...completion, choices: [{ index: 0, message: completion.choices[0]!.message, finish_reason: "stop" }] }), /"choices\[0\]" must have required property 'logprobs'/);
  t.match(specViolation("CreateChatCompletionResponse", { ...completion, created: "now" }), /"created" must be integer/);
  t.match(specViolation("CreateChatCompletionStreamResponse", { ...chunk, choices: [{ ...chunk.choices[0], finish_reason: "done" }] }), /"choices\[0\]\.finish_reason" must be one of "stop", "length"/);
  t.match(specViolation("CreateChatCompletionStreamResponse", { ...chunk, usage: 3 }), /"usage"/, "nullable is null or the schema, not anything");
  t.match(specViolation("ErrorResponse", { error: { message: "bad", type: "invalid_request_error", code: "x" } }), /"error" must have required property 'param'/);
  t.match(specViolation("DeleteResponse", { id: "resp_1", object: "response.deleted", deleted: true }), /"object" must be "response"/);
});

t.test("a discriminated event is checked against the branch its type names", async (t) => {
  const { logprobs: _, ...withoutLogprobs } = textDelta;
  t.equal(specViolation("ResponseStreamEvent", withoutLogprobs), "ResponseStreamEvent must have required property 'logprobs'", "only the output_text.delta branch speaks");
  t.match(specViolation("ResponseStreamEvent", { ...textDelta, type: "response.output_text.typed" }), /"type" must be one of .*"response\.output_text\.delta"/);
  t.match(specViolation("ResponseStreamEvent", { ...textDelta, sequence_number: "3" }), /"sequence_number" must be integer/);
});

t.test("the SDK's fetch records answers out of spec that the SDK itself accepts", async (t) => {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => answer(JSON.parse(body) as { stream?: boolean }, res));
  });
  const answer = (request: { stream?: boolean }, res: ServerResponse): void => {
    if (request.stream !== true) {
      res.setHeader("content-type", "application/json");
      // No `refusal`, no `logprobs`: the SDK does not mind.
      res.end(JSON.stringify({ ...completion, choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] }));
      return;
    }
    res.setHeader("content-type", "text/event-stream");
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    res.write(`data: ${JSON.stringify({ ...chunk, choices: [{ index: 0, delta: {}, finish_reason: "done" }] })}\n\n`);
    res.end("data: [DONE]\n\n");
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  const recorder = new ConformanceRecorder();
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, apiKey: "x", maxRetries: 0, fetch: recorder.fetch });

  const r = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
  t.equal(r.choices[0]?.message.content, "hi", "the SDK got the body unchanged");
  let text = "";
  for await (const c of await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true })) text += c.choices[0]?.delta.content ?? "";
  t.equal(text, "hi", "and the stream unchanged");
  t.same(
    recorder.checks.map((c) => [c.schema, c.where, c.violation]),
    [
      ["CreateChatCompletionResponse", "POST /v1/chat/completions (200)", `"choices[0]" must have required property 'logprobs'; "choices[0].message" must have required property 'refusal'`],
      ["CreateChatCompletionStreamResponse", "POST /v1/chat/completions event 0", null],
      ["CreateChatCompletionStreamResponse", "POST /v1/chat/completions event 1", `"choices[0].finish_reason" must be one of "stop", "length", "tool_calls", "content_filter", "function_call"; "choices[0].finish_reason" must be null`],
    ],
  );
  t.equal(recorder.violations().length, 2, "what assertConforms fails on");
});
