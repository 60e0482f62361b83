/**
 * @module `POST /v1/responses` (the OpenAI Responses API, function tools,
 * streaming or not) and `GET /v1/responses/{id}`. A response ends at the
 * turn's function calls, as a chat completion does. `previous_response_id`
 * continues a stored response: its conversation, plus the new input items.
 * While the engine still retains that response's sequence
 * (`--response-retention-ms`, `--max-retained-responses`), the new items are
 * appended to its resident KV cells and nothing of the history is
 * prefilled again; after that, the whole conversation is rendered and
 * prefilled (less what the prefix cache still holds), on whichever engine
 * the follow-up reached: with NATS configured the store is shared by every
 * engine (response-store.ts), so a response outlives the engine that
 * generated it. An id that is unknown, deleted or past
 * `--response-store-ttl-ms` is a 404. On `--backend openai` the
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
import { actingFor } from "../../../common/src/security/http-auth.js";
import type { CallStreamEvent, CompletionRequest, CompletionResult, Engine } from "../engine/index.js";
import type { EngineMetrics } from "../metrics/index.js";
import { answerInstruction } from "./generation-options.js";
import { CallArgumentsStream } from "./call-arguments-stream.js";
import { HttpError, toHttpError, type ErrorContext } from "./http-errors.js";
import { openAiLogprobs, withSystemText, type OpenAiTokenLogprob } from "./openai.js";
import { describeRetention, type ResponseStore, type StoredResponse } from "./response-store.js";
import {
  assistantTurn,
  messageItem,
  outputItems,
  outputTextPart,
  parseResponsesRequest,
  responseError,
  responseObject,
  type ConversationMessage,
  type FunctionCallItem,
  type OutputItem,
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
function completionRequest(id: string, input: ResponsesInput, previous: StoredResponse | undefined): { request: CompletionRequest; body: ConversationMessage[]; toolsKey: string } {
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

/** Most input items one `input_items` page lists (OpenAI's bound). */
const MAX_PAGE = 100;

export function mountResponses(app: Express, json: RequestHandler, ctx: ResponsesRoutesContext): void {
  /** Responses being generated, by id: `cancel` aborts one. */
  const running = new Map<string, { abort: AbortController; shell: ResponseShell; cancelled: boolean; owner: string }>();
  /** A store that cannot be reached (NATS down) is a 503 to retry, never a 404: the response may well be retained. */
  const fromStore = async <T>(read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (err) {
      ctx.log.warn({ err }, "response store unavailable");
      throw new HttpError(503, ErrorCode.NotReady, `the response store cannot be reached (${(err as Error).message}); retry`, { "Retry-After": String(ctx.errors.retryAfterSeconds) });
    }
  };
  /** 403 unless the caller acts for the key that created the response (responses stored before owners were recorded have none). */
  const refuseUnlessOwner = (owner: string | undefined, req: Request, res: Response, id: string): void => {
    if (owner !== undefined && owner !== actingFor(req, res)) throw HttpError.of(ErrorCode.Forbidden, `response ${id} belongs to another API key: only the key that created it may read, continue, cancel or delete it`);
  };
  const stored = async (req: Request, res: Response): Promise<StoredResponse> => {
    const id = String(req.params["id"]);
    const found = await fromStore(() => ctx.store.get(id));
    if (found === undefined) throw HttpError.of(ErrorCode.NotFound, `response ${id} is unknown or expired`);
    refuseUnlessOwner(found.owner, req, res, id);
    return found;
  };

  app.get("/v1/responses/:id", async (req: Request, res: Response) => {
    res.json((await stored(req, res)).response);
  });

  app.get("/v1/responses/:id/input_items", async (req: Request, res: Response) => {
    const page = inputItemsPage((await stored(req, res)).inputItems, req.query);
    // OpenAI's schema has the ids as required strings: an empty page (past the last item) names none.
    res.json({ object: "list", data: page.items, first_id: page.items[0]?.["id"] ?? "", last_id: page.items.at(-1)?.["id"] ?? "", has_more: page.hasMore });
  });

  app.delete("/v1/responses/:id", async (req: Request, res: Response) => {
    const id = String(req.params["id"]);
    await stored(req, res);
    if (!(await fromStore(() => ctx.store.delete(id)))) throw HttpError.of(ErrorCode.NotFound, `response ${id} is unknown or expired`);
    res.json({ id, object: "response", deleted: true });
  });

  app.post("/v1/responses/:id/cancel", async (req: Request, res: Response) => {
    const id = String(req.params["id"]);
    const run = running.get(id);
    if (run === undefined) {
      const found = await fromStore(() => ctx.store.get(id));
      if (found !== undefined) refuseUnlessOwner(found.owner, req, res, id);
      if (found !== undefined) throw HttpError.of(ErrorCode.BadRequest, `response ${id} has already finished; only a response being generated can be cancelled`);
      throw HttpError.of(ErrorCode.NotFound, `response ${id} is unknown or expired`);
    }
    refuseUnlessOwner(run.owner, req, res, id);
    run.cancelled = true;
    run.abort.abort();
    res.json(cancelledObject(run.shell));
  });

  app.post("/v1/responses", json, async (req: Request, res: Response) => {
    const input = parseResponsesRequest(req.body, { maxPromptBytes: ctx.maxPromptBytes });
    const previousId = input.previousResponseId;
    const previous = previousId !== undefined ? await fromStore(() => ctx.store.get(previousId)) : undefined;
    const owner = actingFor(req, res);
    if (previous !== undefined && previousId !== undefined) refuseUnlessOwner(previous.owner, req, res, previousId);
    if (input.previousResponseId !== undefined && previous === undefined) {
      throw HttpError.of(
        ErrorCode.NotFound,
        `previous_response_id ${input.previousResponseId} is unknown or expired (${describeRetention(ctx.store.retention)}): send the whole conversation as input instead`,
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
    const run = { abort, shell, cancelled: false, owner };
    running.set(shell.id, run);
    res.on("close", () => running.delete(shell.id));
    const started = performance.now();
    let firstTextAt: number | undefined;
    /** The finished response (stored when asked); `streamedArguments`: a call's arguments as its deltas spelled them. */
    const finish = async (result: CompletionResult, withMessage: boolean, streamedArguments?: (callId: string) => string | undefined): Promise<Record<string, unknown>> => {
      const end = performance.now();
      const n = result.usage.completionTokens;
      ctx.metrics.observeCompletion(result.finishReason, firstTextAt === undefined ? undefined : firstTextAt - started, firstTextAt !== undefined && n > 1 ? (end - firstTextAt) / (n - 1) : undefined);
      const output = outputItems(result, messageId, withMessage).map((item) => (item.type === "function_call" ? { ...item, arguments: streamedArguments?.(item.call_id) ?? item.arguments } : item));
      const response = responseObject(shell, result, output);
      if (input.store) {
        const value = { id: shell.id, conversation: [...body, assistantTurn(result)], ...(input.instructions !== undefined ? { instructions: input.instructions } : {}), toolsKey, response, inputItems: input.inputItems, owner };
        // The answer is generated: a store that fails (NATS down, a value over its size limit) costs its follow-ups, not this answer.
        await ctx.store.put(value).catch((err: unknown) => ctx.log.error({ err, response: shell.id }, "response not stored: previous_response_id and GET will not find it"));
      }
      return response;
    };

    if (!input.stream) {
      let result: CompletionResult;
      try {
        result = await engine.complete({ ...request, signal: abort.signal, onText: () => (firstTextAt ??= performance.now()) });
      } catch (err) {
        // Cancelled by `POST /v1/responses/{id}/cancel`: the caller gets the cancelled response, not an error.
        if (run.cancelled) {
          res.json(cancelledObject(shell));
          return;
        }
        throw err;
      }
      res.json(await finish(result, result.content !== ""));
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
    let messageClosed = false;
    let messageText = "";
    /** The message's token log-probabilities as streamed (with `include`). */
    const messageLogprobs: OpenAiTokenLogprob[] = [];
    const part = { item_id: messageId, output_index: 0, content_index: 0 };
    /** The message item ends when the first call opens (text never follows a completion's calls) or at the end. */
    const closeMessage = (status: "completed" | "incomplete"): void => {
      if (!messageOpen || messageClosed) return;
      messageClosed = true;
      send("response.output_text.done", { ...part, text: messageText, logprobs: messageLogprobs });
      send("response.content_part.done", { ...part, part: outputTextPart(messageText, messageLogprobs) });
      send("response.output_item.done", { output_index: 0, item: messageItem(messageId, messageText, status, messageLogprobs) });
    };
    // Each call streams as the model writes it: added when its name is known, its arguments as deltas, done at its end.
    const calls = new Map<string, { stream: CallArgumentsStream; index: number; added: boolean; final?: string }>();
    const callItem = (id: string, name: string, args: string, status: FunctionCallItem["status"] | "incomplete"): Record<string, unknown> => ({ type: "function_call", id: `fc_${id}`, call_id: id, name, arguments: args, status });
    const argumentsDelta = (id: string, index: number, delta: string): void => {
      if (delta !== "") send("response.function_call_arguments.delta", { item_id: `fc_${id}`, output_index: index, delta });
    };
    const onCallStream = (e: CallStreamEvent): void => {
      open();
      if (e.type === "open") {
        closeMessage("completed");
        calls.set(e.id, { stream: new CallArgumentsStream(), index: (messageOpen ? 1 : 0) + calls.size, added: false });
        return;
      }
      const call = calls.get(e.id);
      if (call === undefined) return;
      const add = (name: string): void => {
        if (call.added) return;
        call.added = true;
        send("response.output_item.added", { output_index: call.index, item: callItem(e.id, name, "", "in_progress") });
      };
      switch (e.type) {
        case "text":
        case "arguments": {
          const delta = e.type === "text" ? call.stream.push(e.text) : call.stream.pushArguments(e.name, e.text);
          if (call.stream.name !== undefined) add(call.stream.name);
          argumentsDelta(e.id, call.index, delta);
          return;
        }
        case "done": {
          add(e.name);
          const { delta, final } = call.stream.finish(e.arguments);
          argumentsDelta(e.id, call.index, delta);
          call.final = final;
          send("response.function_call_arguments.done", { item_id: `fc_${e.id}`, output_index: call.index, name: e.name, arguments: final });
          send("response.output_item.done", { output_index: call.index, item: callItem(e.id, e.name, final, "completed") });
          return;
        }
        case "refused":
          // Refused calls are not the response's output; an item already announced ends incomplete.
          if (call.added) send("response.output_item.done", { output_index: call.index, item: callItem(e.id, call.stream.name ?? "", call.stream.streamed, "incomplete") });
          calls.delete(e.id);
          return;
      }
    };
    try {
      const result = await engine.complete({
        ...request,
        signal: abort.signal,
        onText: (text, entries) => {
          firstTextAt ??= performance.now();
          const logprobs = openAiLogprobs(entries ?? []);
          // A delta carries the tokens its text settled; a last call may bring only tokens, for the open message.
          if (text === "" && (logprobs.length === 0 || !messageOpen || messageClosed)) return;
          open();
          if (!messageOpen) {
            messageOpen = true;
            send("response.output_item.added", { output_index: 0, item: messageItem(messageId, "", "in_progress") });
            send("response.content_part.added", { ...part, part: outputTextPart("") });
          }
          messageText += text;
          messageLogprobs.push(...logprobs);
          send("response.output_text.delta", { ...part, delta: text, logprobs });
        },
        onCallStream,
      });
      open();
      const response = await finish(result, messageOpen, (id) => calls.get(id)?.final);
      closeMessage(response["status"] === "incomplete" ? "incomplete" : "completed");
      // Calls no stream announced (a backend without call streaming) go out whole.
      (response["output"] as OutputItem[]).forEach((item, index) => {
        if (item.type !== "function_call" || calls.get(item.call_id)?.final !== undefined) return;
        send("response.output_item.added", { output_index: index, item: { ...item, arguments: "", status: "in_progress" } });
        argumentsDelta(item.call_id, index, item.arguments);
        send("response.function_call_arguments.done", { item_id: item.id, output_index: index, name: item.name, arguments: item.arguments });
        send("response.output_item.done", { output_index: index, item });
      });
      send(response["status"] === "incomplete" ? "response.incomplete" : "response.completed", { response });
      sse?.end();
    } catch (err) {
      if (run.cancelled) {
        // `response.failed` is the last event OpenAI's stream types allow; the response says it was cancelled.
        open();
        send("response.failed", { response: cancelledObject(shell) });
        sse?.end();
        return;
      }
      if (sse === undefined) throw err;
      // Headers are out: the failure is reported in-band, then the stream ends.
      const httpError = toHttpError(err, ctx.errors);
      if (!abort.signal.aborted) ctx.log.warn({ err, response: shell.id }, "response failed mid-stream");
      send("response.failed", { response: { ...responseObject(shell), status: "failed", error: responseError(httpError) } });
      send("error", { code: httpError.code, message: httpError.message, param: null });
      sse.end();
    }
  });
}

/** A response cancelled while it was generated. */
function cancelledObject(shell: ResponseShell): Record<string, unknown> {
  return { ...responseObject(shell), status: "cancelled" };
}

/**
 * One page of a response's input items, as OpenAI pages them: `order`
 * (`desc`, newest first, by default, or `asc`), `limit` (1–100, default 20)
 * and `after` (an item id: the page starts after it).
 */
export function inputItemsPage(items: readonly Record<string, unknown>[], query: Request["query"]): { items: Record<string, unknown>[]; hasMore: boolean } {
  const order = query["order"] ?? "desc";
  if (order !== "asc" && order !== "desc") throw HttpError.of(ErrorCode.BadRequest, `"order" must be "asc" or "desc"`);
  const limit = query["limit"] === undefined ? 20 : Number(query["limit"]);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw HttpError.of(ErrorCode.BadRequest, `"limit" must be an integer in 1..${MAX_PAGE}`);
  const ordered = order === "asc" ? [...items] : [...items].reverse();
  const after = query["after"];
  let start = 0;
  if (after !== undefined) {
    const at = ordered.findIndex((item) => item["id"] === after);
    if (at < 0) throw HttpError.of(ErrorCode.BadRequest, `"after": ${String(after)} is not one of this response's input items`);
    start = at + 1;
  }
  return { items: ordered.slice(start, start + limit), hasMore: start + limit < ordered.length };
}
