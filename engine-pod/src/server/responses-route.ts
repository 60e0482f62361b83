/**
 * @module `POST /v1/responses` (the OpenAI Responses API, function tools,
 * streaming or not) and `GET /v1/responses/{id}`. A response ends at the
 * turn's function calls, as a chat completion does. `previous_response_id`
 * continues a stored response: its conversation, plus the new input items.
 * While the engine still retains that response's sequence
 * (`--response-retention-ms`, `--max-retained-responses`), the new items are
 * appended to its resident KV cells and nothing of the history is
 * prefilled again; after that, the whole conversation is rendered and
 * prefilled (less what the prefix cache still holds). An id that is unknown
 * or past `--response-store-ttl-ms` is a 404. On `--backend openai` the
 * conversation is re-sent to the upstream's chat completions every turn.
 *
 * Streams carry the Responses event types the official SDKs parse
 * (`response.created` … `response.completed`, each with `sequence_number`);
 * like chat completions, the stream opens with the first generated text, so
 * admission errors still get their HTTP status.
 */
import { randomUUID } from "node:crypto";
import type { Express, Request, RequestHandler, Response } from "express";
import { ErrorCode, type Logger } from "../../../common/src/index.js";
import type { CompletionRequest, CompletionResult, Engine } from "../engine/index.js";
import type { EngineMetrics } from "../metrics/index.js";
import { answerInstruction } from "./generation-options.js";
import { HttpError, toHttpError, type ErrorContext } from "./http-errors.js";
import { withSystemText } from "./openai.js";
import type { ResponseStore } from "./response-store.js";
import {
  assistantTurn,
  messageItem,
  outputItems,
  outputTextPart,
  parseResponsesRequest,
  responseObject,
  type ConversationMessage,
  type FunctionCallItem,
  type ResponseShell,
  type ResponsesInput,
} from "./responses.js";
import { openSse, type SseStream } from "./sse.js";

export interface ResponsesRoutesContext {
  engine: () => Engine;
  maxPromptBytes: number;
  metrics: EngineMetrics;
  log: Logger;
  errors: ErrorContext;
  store: ResponseStore;
}

/** The engine request for a parsed body, continuing `previous` when given. */
function completionRequest(id: string, input: ResponsesInput, previous: ReturnType<ResponseStore["get"]>): { request: CompletionRequest; body: ConversationMessage[]; toolsKey: string } {
  // The answer format's instruction is part of the system text: a follow-up under another format starts afresh.
  const answerFormat = input.generation.answerFormat;
  const toolsKey = JSON.stringify(answerFormat === undefined ? input.tools : [input.tools, answerFormat]);
  const body = [...(previous?.conversation ?? []), ...input.input];
  const instructed: ConversationMessage[] = input.instructions !== undefined ? [{ role: "system", content: input.instructions }] : [];
  const system = answerFormat !== undefined ? withSystemText(instructed, answerInstruction(answerFormat)) : instructed;
  // The resident sequence was computed under the previous instructions and tools: continue it only under the same ones.
  const continuation = previous !== undefined && previous.instructions === input.instructions && previous.toolsKey === toolsKey ? { key: previous.id, appended: input.input.length } : undefined;
  const request: CompletionRequest = {
    messages: [...system, ...body],
    tools: input.tools,
    ...(input.maxOutputTokens !== undefined ? { maxTokens: input.maxOutputTokens } : {}),
    ...(input.temperature !== undefined ? { temperature: input.temperature } : {}),
    ...input.generation,
    ...(input.policy !== undefined ? { policy: input.policy } : {}),
    ...(input.store ? { retainAs: id } : {}),
    ...(continuation !== undefined ? { continuation } : {}),
  };
  return { request, body, toolsKey };
}

export function mountResponses(app: Express, json: RequestHandler, ctx: ResponsesRoutesContext): void {
  app.get("/v1/responses/:id", (req: Request, res: Response) => {
    const id = String(req.params["id"]);
    const stored = ctx.store.get(id);
    if (stored === undefined) throw HttpError.of(ErrorCode.NotFound, `response ${id} is unknown or expired`);
    res.json(stored.response);
  });

  app.post("/v1/responses", json, async (req: Request, res: Response) => {
    const input = parseResponsesRequest(req.body, { maxPromptBytes: ctx.maxPromptBytes });
    const previous = input.previousResponseId !== undefined ? ctx.store.get(input.previousResponseId) : undefined;
    if (input.previousResponseId !== undefined && previous === undefined) {
      throw HttpError.of(
        ErrorCode.NotFound,
        `previous_response_id ${input.previousResponseId} is unknown or expired (responses are kept ${Math.round(ctx.store.limits.ttlMs / 1000)} s, at most ${ctx.store.limits.maxEntries}): send the whole conversation as input instead`,
      );
    }
    const engine = ctx.engine();
    const shell: ResponseShell = { id: `resp_${randomUUID().replace(/-/g, "")}`, createdAt: Math.floor(Date.now() / 1000), input };
    const messageId = `msg_${randomUUID().replace(/-/g, "")}`;
    const { request, body, toolsKey } = completionRequest(shell.id, input, previous);
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const started = performance.now();
    let firstTextAt: number | undefined;
    const finish = (result: CompletionResult, withMessage: boolean): Record<string, unknown> => {
      const end = performance.now();
      const n = result.usage.completionTokens;
      ctx.metrics.observeCompletion(result.finishReason, firstTextAt === undefined ? undefined : firstTextAt - started, firstTextAt !== undefined && n > 1 ? (end - firstTextAt) / (n - 1) : undefined);
      const response = responseObject(shell, result, outputItems(result, messageId, withMessage));
      if (input.store) {
        ctx.store.put({ id: shell.id, conversation: [...body, assistantTurn(result)], ...(input.instructions !== undefined ? { instructions: input.instructions } : {}), toolsKey, response });
      }
      return response;
    };

    if (!input.stream) {
      const result = await engine.complete({ ...request, signal: abort.signal, onText: () => (firstTextAt ??= performance.now()) });
      res.json(finish(result, result.content !== ""));
      return;
    }

    let sse: SseStream | undefined;
    let sequence = 0;
    const send = (type: string, payload: Record<string, unknown>): void => {
      sse?.send({ type, sequence_number: sequence++, ...payload }, { event: type });
    };
    const open = (): void => {
      if (sse !== undefined) return;
      sse = openSse(req, res);
      send("response.created", { response: responseObject(shell) });
      send("response.in_progress", { response: responseObject(shell) });
    };
    let messageOpen = false;
    const part = { item_id: messageId, output_index: 0, content_index: 0 };
    try {
      const result = await engine.complete({
        ...request,
        signal: abort.signal,
        onText: (text) => {
          firstTextAt ??= performance.now();
          if (text === "") return;
          open();
          if (!messageOpen) {
            messageOpen = true;
            send("response.output_item.added", { output_index: 0, item: messageItem(messageId, "", "in_progress") });
            send("response.content_part.added", { ...part, part: outputTextPart("") });
          }
          send("response.output_text.delta", { ...part, delta: text, logprobs: [] });
        },
      });
      open();
      const response = finish(result, messageOpen);
      const output = response["output"] as ReturnType<typeof outputItems>;
      output.forEach((item, index) => {
        if (item.type === "message") {
          const text = item.content[0]?.text ?? "";
          send("response.output_text.done", { ...part, text, logprobs: [] });
          send("response.content_part.done", { ...part, part: outputTextPart(text) });
          send("response.output_item.done", { output_index: index, item });
          return;
        }
        const call: FunctionCallItem = item;
        send("response.output_item.added", { output_index: index, item: { ...call, arguments: "", status: "in_progress" } });
        send("response.function_call_arguments.delta", { item_id: call.id, output_index: index, delta: call.arguments });
        send("response.function_call_arguments.done", { item_id: call.id, output_index: index, name: call.name, arguments: call.arguments });
        send("response.output_item.done", { output_index: index, item: call });
      });
      send(response["status"] === "incomplete" ? "response.incomplete" : "response.completed", { response });
      sse?.end();
    } catch (err) {
      if (sse === undefined) throw err;
      // Headers are out: the failure is reported in-band, then the stream ends.
      const httpError = toHttpError(err, ctx.errors);
      if (!abort.signal.aborted) ctx.log.warn({ err, response: shell.id }, "response failed mid-stream");
      const error = { code: httpError.code, message: httpError.message };
      send("response.failed", { response: { ...responseObject(shell), status: "failed", error } });
      send("error", { ...error, param: null });
      sse.end();
    }
  });
}
