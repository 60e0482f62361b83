/**
 * @module `POST /v1/chat/completions`: the OpenAI-compatible endpoint with
 * sync semantics (generation stops at the turn's tool calls →
 * `finish_reason: "tool_calls"`), streaming (`chat.completion.chunk` frames,
 * then `data: [DONE]`) or not. The stream opens with the first generated
 * text, so admission errors (429 capacity, 400 context overflow) still get a
 * proper status. A client that disconnects aborts the completion.
 */
import { randomUUID } from "node:crypto";
import type { Express, Request, RequestHandler, Response } from "express";
import type { Logger } from "../../../common/src/index.js";
import type { CompletionResult, Engine } from "../engine/index.js";
import type { EngineMetrics } from "../metrics/index.js";
import { errorBody, toHttpError, type ErrorContext } from "./http-errors.js";
import { interlaceExtension, openAiFinishReason, openAiToolCalls, openAiUsage, parseChatCompletion } from "./openai.js";
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

    if (!input.stream) {
      const result = await engine.complete({
        ...input.request,
        signal: abort.signal,
        onText: () => (firstTextAt ??= performance.now()),
      });
      observe(result);
      const toolCalls = input.raw ? [] : openAiToolCalls(result);
      res.json({
        id,
        object: "chat.completion",
        created,
        model: input.model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: input.raw ? result.raw : result.content === "" && toolCalls.length > 0 ? null : result.content,
              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
            },
            finish_reason: openAiFinishReason(result.finishReason),
          },
        ],
        usage: openAiUsage(result),
        interlace: interlaceExtension(result, scripted),
      });
      return;
    }

    let sse: SseStream | undefined;
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      id,
      object: "chat.completion.chunk",
      created,
      model: input.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
      ...extra,
    });
    const open = (): SseStream => {
      if (sse === undefined) {
        sse = openSse(req, res);
        sse.send(chunk({ role: "assistant", content: "" }));
      }
      return sse;
    };
    try {
      const result = await engine.complete({
        ...input.request,
        signal: abort.signal,
        onText: (text) => {
          firstTextAt ??= performance.now();
          if (text !== "") open().send(chunk({ content: text }));
        },
      });
      observe(result);
      const stream = open();
      if (!input.raw) {
        const calls = openAiToolCalls(result);
        if (calls.length > 0) stream.send(chunk({ tool_calls: calls.map((c, index) => ({ index, ...c })) }));
      }
      stream.send(chunk({}, openAiFinishReason(result.finishReason), { interlace: interlaceExtension(result, scripted) }));
      if (input.includeUsage) stream.send({ id, object: "chat.completion.chunk", created, model: input.model, choices: [], usage: openAiUsage(result) });
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
