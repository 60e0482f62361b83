/**
 * The weather agent the client tests share: two tools of a city, the scripted
 * policy that calls both at once and then answers (it rides in
 * `interlace_policy`, which the SDKs forward), the tools' local answers, and
 * the same tools for the OpenAI Agents SDK.
 */
import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, tool, type Model } from "@openai/agents";
import type OpenAI from "openai";
import type { ResponseFunctionToolCall, ResponseInputItem } from "openai/resources/responses/responses";
import { z } from "zod";

export const CITY_SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

export const WEATHER_POLICY = {
  type: "lpt-dag",
  calls: [
    { id: "call_w", tool: "get_weather", arguments: { city: "Paris" }, dependsOn: [], estimatedLatencyMs: 800 },
    { id: "call_t", tool: "get_time", arguments: { city: "Paris" }, dependsOn: [], estimatedLatencyMs: 10 },
  ],
  finalText: " It is sunny at noon.",
};

/** What the client's side of each tool answers. */
export function runWeatherTool(name: string, args: { city: string }): string {
  return name === "get_weather" ? `sunny in ${args.city}` : `noon in ${args.city}`;
}

/** The Responses API items answering `calls`. */
export function outputsFor(calls: ResponseFunctionToolCall[]): ResponseInputItem[] {
  return calls.map((c) => ({ type: "function_call_output", call_id: c.call_id, output: runWeatherTool(c.name, JSON.parse(c.arguments) as { city: string }) }));
}

// The Agents SDK resolves `openai` as CommonJS, the tests as ESM: one client class, two type identities.
/** An Agents SDK model over our Responses endpoint at `client`'s base URL. */
export function responsesModel(client: OpenAI): Model {
  return new OpenAIResponsesModel(client as unknown as ConstructorParameters<typeof OpenAIResponsesModel>[0], "interlace");
}

/** An Agents SDK model over our Chat Completions endpoint at `client`'s base URL. */
export function chatModel(client: OpenAI): Model {
  return new OpenAIChatCompletionsModel(client as unknown as ConstructorParameters<typeof OpenAIChatCompletionsModel>[0], "interlace");
}

/** The weather agent on `model`, driven by {@link WEATHER_POLICY}; each tool it runs goes into `ran`. */
export function weatherAgent(model: Model, ran: string[], instructions?: string): Agent {
  return new Agent({
    name: "weather",
    ...(instructions !== undefined ? { instructions } : {}),
    model,
    modelSettings: { maxTokens: 200, providerData: { interlace_policy: WEATHER_POLICY } },
    tools: agentTools(ran),
  });
}

/** The two tools for the Agents SDK; each run's tool name goes into `ran`. */
export function agentTools(ran: string[]) {
  return ["get_weather", "get_time"].map((name) =>
    tool({
      name,
      description: name === "get_weather" ? "Weather of a city" : "Time in a city",
      parameters: z.object({ city: z.string() }),
      execute: ({ city }) => (ran.push(name), runWeatherTool(name, { city })),
    }),
  );
}
