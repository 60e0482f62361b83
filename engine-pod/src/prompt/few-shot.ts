/**
 * @module Few-shot CML conversations rendered as real chat turns (a user
 * message, then an assistant turn with its calls, the interrupts the engine
 * injected into it, a trap, and the answer), so a model that was never
 * fine-tuned on CML sees the format exactly where it will write it: inside
 * its own turn of its own chat template (AsyncLM §4's in-context emulation).
 *
 * The examples use tools of their own, never a benchmark's, and were chosen
 * on the tuning split only (see bench/accuracy/split.ts): a single call, a
 * parallel fan-out answered by interrupts, and a dependent call after a trap.
 */
import { formatCallBlock, formatInterruptBlock, formatTrapBlock } from "../../../common/src/index.js";
import { formatCallBody, type CallStyle } from "./cml-instructions.js";
import type { PromptMessage } from "./render-prompt.js";

/** One worked example: the user's request and the whole assistant turn. */
export interface FewShotExample {
  user: string;
  assistant: string;
}

function call(style: CallStyle, id: string, name: string, args: Record<string, unknown>): string {
  return formatCallBlock(formatCallBody(name, args, style), id);
}

/** The built-in examples (their tools are illustrative and not offered to the model). */
export function builtInExamples(style: CallStyle = "json"): FewShotExample[] {
  return [
    {
      user: "Find the sales report and email me its total.",
      assistant:
        call(style, "r1", "fetch_report", { name: "sales" }) +
        formatTrapBlock() +
        formatInterruptBlock("r1", '{"total": 1200}') +
        call(style, "m1", "send_email", { to: "me", body: "Sales total: 1200" }) +
        formatInterruptBlock("m1", '"sent"') +
        "The sales total is 1200; I emailed it to you.",
    },
    {
      user: "What is the weather in Paris and in Tokyo?",
      assistant:
        call(style, "w1", "get_weather", { city: "Paris" }) +
        call(style, "w2", "get_weather", { city: "Tokyo" }) +
        formatTrapBlock() +
        formatInterruptBlock("w2", '"rain, 18C"') +
        formatInterruptBlock("w1", '"sunny, 24C"') +
        "Paris is sunny at 24C and Tokyo has rain at 18C.",
    },
    {
      user: "Convert 100 US dollars to euros.",
      assistant:
        call(style, "c1", "convert_currency", { amount: 100, from: "USD", to: "EUR" }) +
        formatTrapBlock() +
        formatInterruptBlock("c1", '{"amount": 92.5}') +
        "100 US dollars are 92.5 euros.",
    },
  ];
}

/** Examples as chat messages, to go between the system prompt and the conversation. */
export function fewShotMessages(examples: readonly FewShotExample[]): PromptMessage[] {
  return examples.flatMap((e): PromptMessage[] => [
    { role: "user", content: e.user },
    { role: "assistant", content: e.assistant },
  ]);
}
