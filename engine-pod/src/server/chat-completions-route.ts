/**
 * @module `POST /v1/chat/completions`: the OpenAI-compatible endpoint with
 * sync semantics (generation stops at the turn's tool calls →
 * `finish_reason: "tool_calls"`), streaming (`chat.completion.chunk` frames,
 * then `data: [DONE]`) or not. `n > 1` choices run at once on one prompt:
 * the first prefills it and the others fork its cells. With `logprobs`, each
 * choice carries its content tokens' log-probabilities, and each content chunk
 * those its text completed. The stream opens with the first generated
 * text, so admission errors (429 capacity, 400 context overflow) still get a
 * proper status. A client that disconnects aborts the completion.
 */
import { randomUUID } from "node:crypto";
import type { Express, Request, RequestHandler, Response } from "express";
import type { Logger } from "../../../common/src/index.js";
import type { CallStreamEvent, CompletionResult, Engine, TokenLogprob } from "../engine/index.js";
import type { EngineMetrics } from "../metrics/index.js";
import { errorBody, toHttpError, type ErrorContext } from "./http-errors.js";
import { choicesExtension, choicesUsage, interlaceExtension, openAiFinishReason, openAiLogprobs, openAiToolCalls, parseChatCompletion } from "./openai.js";
import { CallArgumentsStream } from "./call-arguments-stream.js";
import { openSse, type SseStream } from "./sse.js";

export interface CompletionRoutesContext {
  engine: () => Engine;
  maxPromptBytes: number;
  metrics: EngineMetrics;
  log: Logger;
  errors: ErrorContext;
}

export function mountChatCompletions(app: Express, json: RequestHandler, ctx: CompletionRoutesContext): void {
  app.post("/v1/chat/completions", json, async (req: Request, res: Response) => {
    const input = parseChatCompletion(req.body, { maxPromptBytes: ctx.maxPromptBytes });
    const engine = ctx.engine();
    const id = `chatcmpl-${randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const scripted = input.request.policy !== undefined;
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const started = performance.now();
    let firstTextAt: number | undefined;
    const observe = (result: CompletionResult): void => {
      const end = performance.now();
      const n = result.usage.completionTokens;
      const ttft = firstTextAt === undefined ? undefined : firstTextAt - started;
      const tpot = firstTextAt !== undefined && n > 1 ? (end - firstTextAt) / (n - 1) : undefined;
      ctx.metrics.observeCompletion(result.finishReason, ttft, tpot);
    };

    /** The request's `n` choices, sent at once: the first fills the prompt, the others follow it and fork its cells. */
    const runAll = (onText: (index: number, text: string, logprobs: readonly TokenLogprob[]) => void, onCallStream?: (index: number, e: CallStreamEvent) => void): Promise<CompletionResult[]> => {
      const seed = input.request.seed;
      const runs = Array.from({ length: input.n }, (_, index) =>
        engine.complete({
          ...input.request,
          ...(input.n > 1 ? { sibling: true, ...(seed !== undefined ? { seed: seed + index } : {}) } : {}),
          signal: abort.signal,
          onText: (text, entries) => {
            firstTextAt ??= performance.now();
            onText(index, text, entries ?? []);
          },
          ...(onCallStream !== undefined ? { onCallStream: (e: CallStreamEvent) => onCallStream(index, e) } : {}),
        }),
      );
      // One choice failing fails the request: the others stop too.
      for (const run of runs) run.catch(() => abort.abort());
      return Promise.all(runs);
    };
    const message = (result: CompletionResult): Record<string, unknown> => {
      const toolCalls = input.raw ? [] : openAiToolCalls(result);
      return {
        role: "assistant",
        content: input.raw ? result.raw : result.content === "" && toolCalls.length > 0 ? null : result.content,
        // Required by OpenAI's schema; the model never refuses apart from its text.
        refusal: null,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      };
    };
    /** A choice's `logprobs` (OpenAI writes null when none were asked for); each choice has its own tokens. */
    const choiceLogprobs = (entries: readonly TokenLogprob[] | undefined): Record<string, unknown> | null =>
      input.request.logprobs === undefined ? null : { content: openAiLogprobs(entries ?? []), refusal: null };
    const extension = (results: CompletionResult[]): Record<string, unknown> => (results.length === 1 ? interlaceExtension(results[0]!, scripted) : choicesExtension(results, scripted));

    if (!input.stream) {
      const results = await runAll(() => undefined);
      results.forEach(observe);
      res.json({
        id,
        object: "chat.completion",
        created,
        model: input.model,
        choices: results.map((result, index) => ({ index, message: message(result), logprobs: choiceLogprobs(result.logprobs), finish_reason: openAiFinishReason(result.finishReason) })),
        usage: choicesUsage(results),
        interlace: extension(results),
      });
      return;
    }

    let sse: SseStream | undefined;
    const chunk = (index: number, delta: Record<string, unknown>, finishReason: string | null = null, entries?: readonly TokenLogprob[]): Record<string, unknown> => ({
      id,
      object: "chat.completion.chunk",
      created,
      model: input.model,
      choices: [{ index, delta, ...(entries !== undefined ? { logprobs: choiceLogprobs(entries) } : {}), finish_reason: finishReason }],
    });
    const open = (): SseStream => {
      if (sse === undefined) {
        sse = openSse(req, res);
        for (let index = 0; index < input.n; index++) sse.send(chunk(index, { role: "assistant", content: "" }));
      }
      return sse;
    };
    try {
      // Each choice's calls stream as the model writes them: id and name first, then the arguments in pieces.
      const streaming = Array.from({ length: input.n }, () => new Map<string, { stream: CallArgumentsStream; index: number; named: boolean; done: boolean }>());
      const onCallStream = (choice: number, e: CallStreamEvent): void => {
        const calls = streaming[choice]!;
        if (e.type === "open") {
          calls.set(e.id, { stream: new CallArgumentsStream(), index: calls.size, named: false, done: false });
          return;
        }
        const call = calls.get(e.id);
        if (call === undefined || e.type === "refused") return;
        const send = (fn: Record<string, unknown>, head = false): void => {
          open().send(chunk(choice, { tool_calls: [{ index: call.index, ...(head ? { id: e.id, type: "function" } : {}), function: fn }] }));
        };
        const delta = e.type === "text" ? call.stream.push(e.text) : e.type === "arguments" ? call.stream.pushArguments(e.name, e.text) : call.stream.finish(e.arguments).delta;
        const name = e.type === "done" ? e.name : call.stream.name;
        if (!call.named && name !== undefined) {
          call.named = true;
          send({ name, arguments: "" }, true);
        }
        if (delta !== "") send({ arguments: delta });
        if (e.type === "done") call.done = true;
      };
      const results = await runAll(
        (index, text, entries) => {
          // A content chunk carries the tokens its text settled (a last one may carry only tokens).
          if (text !== "" || entries.length > 0) open().send(chunk(index, { content: text }, null, input.request.logprobs !== undefined ? entries : undefined));
        },
        input.raw ? undefined : onCallStream,
      );
      results.forEach(observe);
      const stream = open();
      results.forEach((result, index) => {
        if (!input.raw) {
          // Calls no stream announced (a backend without call streaming) go out whole.
          const calls = openAiToolCalls(result)
            .map((c, i) => ({ index: i, ...c }))
            .filter((c) => streaming[index]!.get(c.id)?.done !== true);
          if (calls.length > 0) stream.send(chunk(index, { tool_calls: calls }));
        }
        stream.send(index === results.length - 1 ? { ...chunk(index, {}, openAiFinishReason(result.finishReason)), interlace: extension(results) } : chunk(index, {}, openAiFinishReason(result.finishReason)));
      });
      if (input.includeUsage) stream.send({ id, object: "chat.completion.chunk", created, model: input.model, choices: [], usage: choicesUsage(results) });
      stream.send("[DONE]");
      stream.end();
    } catch (err) {
      if (sse === undefined) throw err;
      // Headers are out: report in-band, as OpenAI does, then close the stream.
      const httpError = toHttpError(err, ctx.errors);
      if (!abort.signal.aborted) ctx.log.warn({ err, completion: id }, "completion failed mid-stream");
      sse.send(errorBody(httpError));
      sse.send("[DONE]");
      sse.end();
    }
  });
}
