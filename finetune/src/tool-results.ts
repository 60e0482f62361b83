/**
 * @module Plausible tool results for fine-tuning samples, and the sentence
 * that reports each one. BFCL's functions are never executed, so a result is
 * made up from the call: a number for a calculation, a confirmation for an
 * action, a short list for a search, a yes/no for a check. What matters for
 * training is that results differ from call to call and that the final
 * answer reads them, so the model learns to use what arrives rather than to
 * close every task with the same sentence. A share of results are the
 * terse `{"status": "ok"}` a real tool (and the accuracy bench) answers with,
 * and a share are transient failures in the engine's error-line format that
 * the model answers by calling again.
 */
import { ErrorCode, type ScriptedCall } from "../../common/src/index.js";
import { formatErrorLine } from "../../common/src/wire/index.js";

export type Rng = () => number;

/** A result as the engine injects it, and how the final answer speaks of it. */
export interface ToolResult {
  /** The interrupt value (JSON or an error line). */
  value: string;
  /** A clause reporting the result ("the area is 37.5"); empty for a bare acknowledgement. */
  clause: string;
  /** The result is a failure the model should answer by calling again. */
  failed: boolean;
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;

const ACTION_VERBS = new Set(["add", "book", "buy", "cancel", "create", "delete", "order", "pay", "play", "post", "purchase", "register", "remove", "reserve", "schedule", "sell", "send", "set", "start", "stop", "submit", "transfer", "turn", "update", "upload", "make", "place", "record", "log", "subscribe"]);
const CHECK_VERBS = new Set(["check", "is", "validate", "verify", "has", "can", "detect", "identify_if"]);
const NUMBER_VERBS = new Set(["calculate", "calc", "compute", "estimate", "predict", "convert", "count", "sum", "average", "solve", "integrate", "derivative", "measure", "determine", "evaluate"]);
const NUMBER_NOUNS = /area|volume|total|sum|price|cost|distance|rate|probability|average|mean|median|speed|velocity|time|duration|percent|score|count|number|population|length|height|weight|mass|energy|force|power|value|balance|interest|return|tax|temperature|density|pressure|frequency|factorial|root|gcd|lcm|ratio|age|salary|revenue|profit|amount|capacity|depth|circumference|perimeter|hypotenuse|angle|magnitude|charge|current|resistance|voltage|displacement|acceleration|concentration|yield|gdp|index/;
const NAMES = ["Maple", "Harbor", "Summit", "Cedar", "Northwind", "Riverside", "Aurora", "Beacon", "Juniper", "Granite", "Willow", "Orchid", "Atlas", "Meridian", "Falcon", "Sierra"];
const WEATHER = ["sunny", "cloudy", "light rain", "clear skies", "windy", "overcast", "snow showers", "humid"];

const QUERY_VERBS = new Set(["get", "find", "search", "fetch", "lookup", "look", "list", "retrieve", "query", "show", "analyze", "analyse", "recommend", "generate", "plan", "suggest", "locate", "read", "track", "monitor", "compare", "translate", "summarize"]);
/** Adjectives a tool name leads with ("find_nearest" in "parking_lot"): the namespace is the noun they qualify. */
const QUALIFIERS = new Set(["nearest", "best", "latest", "top", "current", "recent", "popular", "cheapest", "closest", "upcoming"]);

/** `math.calculate_triangle_area` → verb `calculate`, noun `triangle area`; `math.factorial` → `get`, `factorial`. */
export function describeTool(tool: string): { verb: string; noun: string } {
  const split = (s: string): string[] => s.split(/[_\s-]+|(?<=[a-z])(?=[A-Z])/).map((w) => w.toLowerCase()).filter((w) => w !== "");
  const dot = tool.lastIndexOf(".");
  const namespace = dot >= 0 ? split(tool.slice(0, dot).replace(/\./g, "_")) : [];
  const words = split(dot >= 0 ? tool.slice(dot + 1) : tool);
  const first = words[0] ?? "get";
  const known = QUERY_VERBS.has(first) || ACTION_VERBS.has(first) || CHECK_VERBS.has(first) || NUMBER_VERBS.has(first);
  const verb = known ? first : "get";
  let noun = known ? words.slice(1) : words;
  if (noun.length === 0) noun = namespace;
  else if (noun.length === 1 && QUALIFIERS.has(noun[0]!) && namespace.length > 0) noun = [...noun, ...namespace];
  return { verb, noun: noun.join(" ") || "result" };
}

/** A number that looks like a measurement: integers for counts, two decimals otherwise. */
function drawNumber(rng: Rng, noun: string): number {
  if (/count|number|population|factorial|gcd|lcm|age/.test(noun)) return Math.floor(1 + rng() * (rng() < 0.5 ? 100 : 100_000));
  const magnitude = 10 ** Math.floor(rng() * 5 - 1);
  return Math.round(rng() * 9 * magnitude * 100 + magnitude * 100) / 100;
}

function firstStringArgument(call: ScriptedCall): string | undefined {
  return Object.values(call.arguments).find((v): v is string => typeof v === "string" && v.length > 0 && v.length <= 40);
}

/** A successful result for `call` (never a failure). */
export function successResult(call: ScriptedCall, rng: Rng): ToolResult {
  const { verb, noun } = describeTool(call.tool);
  const subject = firstStringArgument(call);
  const key = noun.replace(/\s+/g, "_") || "result";
  if (rng() < 0.15) return { value: '{"status": "ok"}', clause: "", failed: false };
  if (ACTION_VERBS.has(verb)) {
    const id = `${pick(rng, ["A", "B", "C", "K", "R", "T"])}${Math.floor(1000 + rng() * 9000)}`;
    return { value: JSON.stringify({ status: "done", confirmation: id }), clause: `the ${noun || verb} is done (confirmation ${id})`, failed: false };
  }
  if (CHECK_VERBS.has(verb)) {
    const yes = rng() < 0.6;
    return { value: JSON.stringify({ result: yes }), clause: `${noun || "it"}: ${yes ? "yes" : "no"}`, failed: false };
  }
  if (/weather|forecast|climate/.test(noun)) {
    const sky = pick(rng, WEATHER);
    const temp = Math.round(-5 + rng() * 40);
    return { value: JSON.stringify({ conditions: sky, temperature_c: temp }), clause: `${subject ?? "it"} has ${sky} at ${temp}°C`, failed: false };
  }
  if (NUMBER_VERBS.has(verb) || NUMBER_NOUNS.test(noun)) {
    const n = drawNumber(rng, noun);
    return { value: JSON.stringify({ [key]: n }), clause: `the ${noun}${subject !== undefined && rng() < 0.4 ? ` for ${subject}` : ""} is ${n}`, failed: false };
  }
  if (/s$/.test(noun) && !/ss$/.test(noun)) {
    const items = [pick(rng, NAMES), pick(rng, NAMES)].filter((x, i, a) => a.indexOf(x) === i).map((x) => `${x} ${noun.replace(/s$/, "").split(" ").at(-1)}`);
    return { value: JSON.stringify({ [key]: items }), clause: `I found ${items.join(" and ")}`, failed: false };
  }
  const text = `${pick(rng, NAMES)} ${noun.split(" ").at(-1) ?? "result"}`.trim();
  return { value: JSON.stringify({ [key]: text }), clause: `the ${noun || "result"}${subject !== undefined ? ` for ${subject}` : ""} is ${text}`, failed: false };
}

/** A transient failure in the engine's error-line format: the model calls again. */
export function failureResult(rng: Rng): ToolResult {
  const [code, message] = pick(rng, [
    [ErrorCode.ToolTimeout, "the tool did not answer within 30000 ms"],
    [ErrorCode.ToolFailed, "503 Service Unavailable"],
    [ErrorCode.UpstreamUnavailable, "connection reset by peer"],
  ] as const);
  return { value: formatErrorLine(code, message), clause: "", failed: true };
}

const capitalise = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** One sentence reporting `clauses` (bare acknowledgements collapse into "done"). */
export function reportSentence(clauses: readonly string[], rng: Rng): string {
  const said = clauses.filter((c) => c !== "");
  if (said.length === 0) return pick(rng, ["Done.", "All done.", "That is done.", "Finished."]);
  const joined = said.length === 1 ? said[0]! : `${said.slice(0, -1).join(", ")} and ${said.at(-1)!}`;
  return `${capitalise(joined)}.`;
}
