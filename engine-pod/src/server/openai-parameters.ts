/**
 * @module Every parameter OpenAI documents for chat completions and
 * Responses, with what Interlace does with it: `implemented`, `refused`
 * (a 400 naming it, unless the value is absent, null or the one value that
 * asks for nothing), or `no effect` (identifiers that change no output).
 * A parameter OpenAI does not document is a 400 as well, as OpenAI answers
 * it. The README's parameter tables, and the body schemas' properties
 * (`common/src/wire/`), are checked against these.
 */
import { ErrorCode } from "../../../common/src/index.js";
import { HttpError } from "./http-errors.js";

export type ParameterSupport = "implemented" | "refused" | "no effect";

export interface ParameterRow {
  support: ParameterSupport;
  /** What it does here, or why it is refused (the 400 quotes it). */
  note: string;
  /** A refused parameter's values that ask for nothing and so pass (`logprobs: false`). */
  passes?: (value: unknown) => boolean;
}

const isFalse = (v: unknown): boolean => v === false;
const isEmpty = (v: unknown): boolean => (Array.isArray(v) && v.length === 0) || (typeof v === "object" && v !== null && Object.keys(v).length === 0);
/** An object whose every field is null or false (SDKs send `{effort: null}`): it asks for nothing. */
const asksNothing = (v: unknown): boolean => isEmpty(v) || (typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => x === null || x === false));

const SHARED: Record<string, ParameterRow> = {
  model: { support: "implemented", note: "echoed; the endpoint's path (or the pod) decides the model" },
  temperature: { support: "implemented", note: "0..2; default 0 (greedy)" },
  top_p: { support: "implemented", note: "nucleus sampling, (0, 1]" },
  tools: { support: "implemented", note: "function tools; their schemas become the call grammar" },
  tool_choice: { support: "implemented", note: "`auto`, `none` (no tools shown), `required` and a named function (the first call block is opened for the model, of that function)" },
  parallel_tool_calls: { support: "implemented", note: "`false`: the turn ends at its first call" },
  stream: { support: "implemented", note: "server-sent events" },
  user: { support: "no effect", note: "an end-user identifier; accepted, changes no output (no per-user accounting here)" },
  safety_identifier: { support: "no effect", note: "an end-user identifier; accepted, changes no output (no per-user accounting here)" },
  service_tier: { support: "refused", note: "one tier: only `auto` and `default` are accepted", passes: (v) => v === "auto" || v === "default" },
  prompt_cache_key: { support: "refused", note: "placement finds shared prefixes by hashing them; there is no key to route by" },
  prompt_cache_retention: { support: "refused", note: "retention is the engine's `--response-retention-ms`" },
};

export const CHAT_COMPLETIONS_PARAMETERS: Readonly<Record<string, ParameterRow>> = {
  ...SHARED,
  messages: { support: "implemented", note: "system, developer, user, assistant (with tool_calls) and tool messages; text content" },
  max_completion_tokens: { support: "implemented", note: "generated tokens, call blocks included" },
  max_tokens: { support: "implemented", note: "as `max_completion_tokens`" },
  seed: { support: "implemented", note: "llama.cpp's sampler seed" },
  frequency_penalty: { support: "implemented", note: "-2..2, over the completion's generated tokens" },
  presence_penalty: { support: "implemented", note: "-2..2, over the completion's generated tokens" },
  stop: { support: "implemented", note: "up to 4 strings; the text ends before the first, which is not returned" },
  response_format: { support: "implemented", note: "`text`, `json_object` and `json_schema`: the answer is generated under a grammar built from the schema" },
  stream_options: { support: "implemented", note: "`include_usage`" },
  n: { support: "implemented", note: "1..8 choices, run at once: the first prefills the prompt and the others fork its cells (`interlace.prefill_saved_tokens`); with a `seed`, choice i samples with seed + i" },
  logprobs: { support: "implemented", note: "`true`: each content token's log-probability (tool-call tokens have none; with `n`, per choice), streamed with its delta" },
  top_logprobs: { support: "implemented", note: "0..20 most likely alternatives per token; only with `logprobs: true`" },
  logit_bias: { support: "refused", note: "not applied", passes: isEmpty },
  store: { support: "refused", note: "chat completions are not stored (use Responses)", passes: isFalse },
  metadata: { support: "refused", note: "chat completions are not stored (use Responses)", passes: isEmpty },
  modalities: { support: "refused", note: "text only", passes: (v) => Array.isArray(v) && v.length === 1 && v[0] === "text" },
  audio: { support: "refused", note: "text only" },
  prediction: { support: "refused", note: "predicted outputs are not used" },
  reasoning_effort: { support: "refused", note: "the models served here do not reason in a separate channel" },
  verbosity: { support: "refused", note: "not applied" },
  web_search_options: { support: "refused", note: "no built-in web search: give the app a tool pool" },
  functions: { support: "refused", note: "deprecated by OpenAI: use `tools`" },
  function_call: { support: "refused", note: "deprecated by OpenAI: use `tool_choice`" },
};

export const RESPONSES_PARAMETERS: Readonly<Record<string, ParameterRow>> = {
  ...SHARED,
  input: { support: "implemented", note: "text, messages, `function_call` and `function_call_output` items" },
  instructions: { support: "implemented", note: "the system message" },
  max_output_tokens: { support: "implemented", note: "generated tokens, call blocks included" },
  max_tool_calls: { support: "implemented", note: "the turn ends at that many calls" },
  previous_response_id: { support: "implemented", note: "continues a stored response on any engine sharing the store (its KV stays resident on its own engine for `--response-retention-ms`)" },
  store: { support: "implemented", note: "`false`: the response is neither kept nor continuable" },
  metadata: { support: "implemented", note: "kept and echoed" },
  text: { support: "implemented", note: "`format`: `text`, `json_object` and `json_schema` (as `response_format` in chat completions)" },
  truncation: { support: "refused", note: "a conversation longer than the context is a 400", passes: (v) => v === "disabled" },
  include: { support: "implemented", note: "`message.output_text.logprobs` (the output text's token log-probabilities, streamed with its deltas); other values are a 400" },
  top_logprobs: { support: "implemented", note: "0..20 most likely alternatives per token; above 0 it asks for the log-probabilities too" },
  reasoning: { support: "refused", note: "the models served here do not reason in a separate channel", passes: asksNothing },
  stream_options: { support: "refused", note: "no stream options", passes: asksNothing },
  background: { support: "refused", note: "responses run in the request", passes: isFalse },
  conversation: { support: "refused", note: "chain turns with `previous_response_id`" },
  prompt: { support: "refused", note: "stored prompt templates are not supported" },
};

/**
 * Refuses what the endpoint does not do: a parameter it does not know and a
 * refused one that asks for something. `extensions` are Interlace's own
 * fields (`interlace_*`), which the body schema lists and checks.
 */
export function refuseUnsupported(body: Record<string, unknown>, table: Readonly<Record<string, ParameterRow>>, endpoint: string, extensions: readonly string[]): void {
  for (const [key, value] of Object.entries(body)) {
    const row = table[key];
    if (row === undefined) {
      if (extensions.includes(key)) continue;
      throw HttpError.of(ErrorCode.BadRequest, `"${key}" is not a parameter of ${endpoint}`);
    }
    if (row.support === "refused" && value !== null && value !== undefined && row.passes?.(value) !== true) {
      throw HttpError.of(ErrorCode.BadRequest, `"${key}" is not supported: ${row.note}`);
    }
  }
}
