/**
 * @module The system prompt that teaches CML in context (AsyncLM §4–§5's
 * emulation of fine-tuning by instructions and few-shot examples): how to
 * write call blocks, that results arrive as interrupts, when to trap, and the
 * tool list with each tool's estimated latency so the model can start the
 * longest-running calls first (LPT).
 */
import { CML, formatCallBlock, formatInterruptBlock, formatTrapBlock, type ToolSpec } from "../../../common/src/index.js";

/** How call bodies are written: JSON (what the call grammar enforces) or Python style. */
export type CallStyle = "json" | "python";

/**
 * How much of CML the system prompt explains: `full` (the rules, for a model
 * that learns CML from the prompt alone) or `brief` (the syntax in one line,
 * for a model fine-tuned on CML: a few hundred prompt tokens fewer to prefill).
 */
export const PROMPT_INSTRUCTIONS = ["full", "brief"] as const;
export type PromptInstructions = (typeof PROMPT_INSTRUCTIONS)[number];

/** Few-shot examples in a CML prompt: `builtin` (what a model never fine-tuned on CML needs) or `none`. */
export const PROMPT_EXAMPLES = ["builtin", "none"] as const;
export type PromptExamples = (typeof PROMPT_EXAMPLES)[number];

/** How a model is prompted with CML; a fine-tuned model is prompted as it was trained (its adapter says how). */
export interface PromptStyle {
  examples: PromptExamples;
  instructions: PromptInstructions;
}

export const DEFAULT_PROMPT_STYLE: PromptStyle = { examples: "builtin", instructions: "full" };

export interface CmlSystemPromptOptions {
  /** The app's own system prompt, placed first. */
  system?: string;
  tools: readonly ToolSpec[];
  /** `true` (default): the built-in worked example; `false`: none; strings: your own transcripts. */
  fewShot?: boolean | readonly string[];
  /** Default `json`. */
  callStyle?: CallStyle;
  /** Default `full`. */
  instructions?: PromptInstructions;
}

/** A call body in the chosen style. */
export function formatCallBody(name: string, args: Record<string, unknown>, style: CallStyle = "json"): string {
  if (style === "json") return JSON.stringify({ name, arguments: args });
  const py = (v: unknown): string => {
    if (v === null) return "None";
    if (v === true) return "True";
    if (v === false) return "False";
    if (Array.isArray(v)) return `[${v.map(py).join(", ")}]`;
    if (typeof v === "object") return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${JSON.stringify(k)}: ${py(x)}`).join(", ")}}`;
    return JSON.stringify(v);
  };
  return `${name}(${Object.entries(args).map(([k, v]) => `${k}=${py(v)}`).join(", ")})`;
}

/** `~1.2 s`, `~350 ms`, or `unknown`. */
export function formatLatency(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "unknown";
  return ms >= 1000 ? `~${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s` : `~${Math.round(ms)} ms`;
}

/** One tool as the model reads it: name, latency, description, parameters schema. */
export function describeTool(tool: ToolSpec): string {
  return [
    `- ${tool.name} (estimated latency ${formatLatency(tool.estimatedLatencyMs)}): ${tool.description.trim() || "(no description)"}`,
    `  parameters: ${JSON.stringify(tool.parameters)}`,
  ].join("\n");
}

/** The built-in worked example, with tools of its own so it never suggests a real call. */
function builtInExample(style: CallStyle): string {
  const c = (id: string, name: string, args: Record<string, unknown>) => formatCallBlock(formatCallBody(name, args, style), id);
  return [
    "Example (its tools are illustrative: fetch_report ~2.0 s, get_time ~50 ms, send_email ~300 ms):",
    "User: Email me the sales total, and tell me the time.",
    "Assistant: " +
      c("rep", "fetch_report", { name: "sales" }) +
      c("now", "get_time", {}) +
      "I started the slow report first. " +
      formatInterruptBlock("now", '"14:05"') +
      "It is 14:05. The email needs the report, so I wait. " +
      formatTrapBlock() +
      formatInterruptBlock("rep", '{"total": 1200}') +
      c("mail", "send_email", { to: "me", body: "Sales total: 1200" }) +
      "The sales total is 1200. " +
      formatInterruptBlock("mail", '"sent"') +
      "I emailed it to you.",
  ].join("\n");
}

/**
 * The system prompt teaching CML and listing the tools. Plain text with the
 * marker strings in it; the renderer turns them into control tokens where
 * the model has them.
 */
export function buildCmlSystemPrompt(opts: CmlSystemPromptOptions): string {
  const style = opts.callStyle ?? "json";
  const example = style === "json" ? '{"name": "tool_name", "arguments": {"arg": "value"}}' : 'tool_name(arg="value")';
  const parts: string[] = [];
  if (opts.system !== undefined && opts.system.trim() !== "") parts.push(opts.system.trim());
  if (opts.tools.length > 0) {
    const brief = [`Call tools with ${CML.CALL}id${CML.HEAD}${example}${CML.END}; results arrive as ${CML.INTR}id${CML.HEAD}result${CML.END}; ${formatTrapBlock()} waits for the next result.`];
    const full = [
      "You can call tools while you keep writing. Tools run in the background; their results are delivered to you later.",
      "",
      "How to call a tool:",
      `- Write one call per block: ${CML.CALL}id${CML.HEAD}${example}${CML.END}`,
      `- id is a short name you choose (letters, digits, _), unique in the conversation, e.g. job1. Use ${style === "json" ? "JSON with the exact parameter names" : "Python keyword arguments with the exact parameter names"}.`,
      "- A call starts the moment you write its block. Do not wait: write other independent calls or text right away, each call in its own block.",
      `- Results arrive by themselves as interrupt blocks: ${CML.INTR}id${CML.HEAD}result${CML.END}. Only the system writes ${CML.INTR}; never write it yourself. An error result starts with "error:" — fix the call and try again.`,
      "- Start the longest-running calls first (see each tool's estimated latency): while they run, make the shorter calls.",
      "- A call that needs another call's result must wait until that result has arrived.",
      `- When nothing is left to do until a result arrives, write ${formatTrapBlock()} and stop; you resume when the next result arrives.`,
      "- When all results you need are in, answer in one short sentence that uses them, and end your turn.",
    ];
    parts.push(((opts.instructions ?? "full") === "brief" ? brief : full).join("\n"));
    parts.push(["Available tools:", ...opts.tools.map(describeTool)].join("\n"));
    const fewShot = opts.fewShot ?? true;
    const examples = fewShot === true ? [builtInExample(style)] : fewShot === false ? [] : [...fewShot];
    if (examples.length > 0) parts.push(examples.join("\n\n"));
  }
  return parts.join("\n\n");
}
