/**
 * @module One schema source for the OpenAI-compatible request surface: the
 * body schemas of `common/src/wire/` list exactly the parameters of the
 * parameter table (`openai-parameters.ts`), the parsers' 400s come from the
 * one validator and name the parameter, and the OpenAPI document serves
 * those same schema objects, committed as `docs/openapi.json` from this
 * source. Pure: no engine is started.
 */
import t from "tap";
import {
  cacheToolOutputBodySchema,
  chatCompletionBodySchema,
  createSessionBodySchema,
  interruptBodySchema,
  responsesBodySchema,
} from "../../common/src/wire/index.js";
import type { JsonSchema } from "../../common/src/index.js";
import { openApiUpToDate, renderOpenApi } from "../../engine-pod/src/server/generate-openapi.js";
import { HttpError } from "../../engine-pod/src/server/http-errors.js";
import { parseChatCompletion } from "../../engine-pod/src/server/openai.js";
import { CHAT_COMPLETIONS_PARAMETERS, RESPONSES_PARAMETERS, type ParameterRow } from "../../engine-pod/src/server/openai-parameters.js";
import { OPENAPI_DOCUMENT } from "../../engine-pod/src/server/openapi.js";
import { parseResponsesRequest } from "../../engine-pod/src/server/responses.js";

const limits = { maxPromptBytes: 1 << 20 };
const user = { role: "user", content: "hi" };

/** The 400 a parser throws for `body`, as `status message`. */
function refusal(parse: (body: unknown, l: typeof limits) => unknown, body: unknown): string {
  try {
    parse(body, limits);
  } catch (err) {
    if (err instanceof HttpError) return `${err.status} ${err.message}`;
    throw err;
  }
  return "accepted";
}

t.test("every schema property has a row in the parameter table, and every row a property", async (t) => {
  const check = (name: string, schema: JsonSchema, table: Readonly<Record<string, ParameterRow>>): void => {
    const properties = Object.keys(schema["properties"] as object).filter((k) => !k.startsWith("interlace_"));
    t.same(properties.filter((k) => table[k] === undefined), [], `${name}: no schema property without a row`);
    t.same(Object.keys(table).filter((k) => !properties.includes(k)), [], `${name}: no row without a schema property`);
  };
  check("chat completions", chatCompletionBodySchema, CHAT_COMPLETIONS_PARAMETERS);
  check("responses", responsesBodySchema, RESPONSES_PARAMETERS);
});

t.test("chat completions: the validator's 400s name the parameter, with its bounds or enum", async (t) => {
  const cases: [unknown, RegExp][] = [
    [{ messages: [] }, /^400 "messages" must be a non-empty array of messages$/],
    [{ messages: [{ role: "robot", content: "x" }] }, /"messages\[0\]\.role" must be one of "system", "developer", "user", "assistant", "tool", got "robot"/],
    [{ messages: [user], n: 9 }, /^400 "n" must be an integer in 1\.\.8$/],
    [{ messages: [user], top_p: 0 }, /^400 "top_p" must be a number in \(0, 1\]$/],
    [{ messages: [user], temperature: "hot" }, /^400 "temperature" must be number$/],
    [{ messages: [user], seed: -1 }, /^400 "seed" must be an integer in 0\.\.4294967295$/],
    [{ messages: [user], stop: ["a", "b", "c", "d", "e"] }, /^400 "stop" must be a non-empty string or an array of at most 4 of them$/],
    [{ messages: [user], tool_choice: "always" }, /^400 "tool_choice" must be "auto", "none", "required" or \{"type": "function", "function": \{"name"\}\}$/],
    [{ messages: [user], response_format: { type: "json_schema" } }, /^400 "response_format\.json_schema" is required$/],
    [{ messages: [user], response_format: { type: "json_schema", json_schema: { name: "a b", schema: {} } } }, /"response_format\.json_schema\.name" must be 1 to 64 letters/],
    [{ messages: [user, { role: "tool", content: "x" }] }, /^400 "messages\[1\]\.tool_call_id" is required$/],
    [{ messages: [user], interlace_raw_cml: "yes" }, /^400 "interlace_raw_cml" must be boolean$/],
    [{ messages: [user], interlace_nope: true }, /^400 "interlace_nope" is not a parameter of chat completions$/],
    [{ messages: [user], logit_bias: { "1": 5 } }, /^400 "logit_bias" is not supported/],
    [{ messages: [user], response_format: { type: "json_object", json_schema: { name: "x", schema: {} } } }, /^400 "response_format.json_schema" is not allowed here/],
  ];
  for (const [body, expected] of cases) t.match(refusal(parseChatCompletion, body), expected, JSON.stringify(body));
  t.equal(refusal(parseChatCompletion, { messages: [user], temperature: null, tool_choice: null, stop: null, logprobs: false, logit_bias: {} }), "accepted", "null is absent; refused parameters pass at the values that ask for nothing");
});

t.test("Responses: the validator's 400s name the parameter", async (t) => {
  const cases: [unknown, RegExp][] = [
    [{ model: "m" }, /^400 "input" is required$/],
    [{ input: "" }, /^400 "input" must be a non-empty string or a non-empty array of input items$/],
    [{ input: [{ type: "item_reference", id: "x" }] }, /"input\[0\]\.type" must be one of "message", "function_call", "function_call_output", got "item_reference"/],
    [{ input: [{ type: "function_call", call_id: "c1" }] }, /"input\[0\]\.name" is required/],
    [{ input: "hi", max_output_tokens: 0 }, /^400 "max_output_tokens" must be an integer >= 1$/],
    [{ input: "hi", text: { verbosity: "low" } }, /"text\.verbosity" must be null: only "text\.format" is supported/],
    [{ input: "hi", tool_choice: { type: "function" } }, /^400 "tool_choice" must be "auto", "none", "required" or \{"type": "function", "name"\}$/],
    [{ input: "hi", tools: [{ type: "web_search" }] }, /"tools\[0\]" must be a function tool: only \{"type": "function"/],
  ];
  for (const [body, expected] of cases) t.match(refusal(parseResponsesRequest, body), expected, JSON.stringify(body));
});

t.test("the OpenAPI document's request schemas are the wire schemas, and docs/openapi.json is generated from them", async (t) => {
  const schemas = OPENAPI_DOCUMENT.components.schemas;
  t.equal(schemas.CreateSessionRequest, createSessionBodySchema);
  t.equal(schemas.PostInterruptRequest, interruptBodySchema);
  t.equal(schemas.ChatCompletionRequest, chatCompletionBodySchema);
  t.equal(schemas.ResponsesRequest, responsesBodySchema);
  t.equal(schemas.CacheToolOutputRequest, cacheToolOutputBodySchema);
  t.ok(await openApiUpToDate(), "docs/openapi.json is what `npm run openapi` writes");
  t.match(JSON.parse(renderOpenApi()), { paths: { "/v1/chat/completions": { post: { requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/ChatCompletionRequest" } } } } } } } });
});
