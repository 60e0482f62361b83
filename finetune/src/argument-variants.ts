/**
 * @module Argument variants of a training task: the same request and call
 * with other values. Every number, and every place, person, company or
 * ticker, that a call passes and the user's text spells out verbatim is
 * replaced, in the text and in the call alike, by another value of the same
 * kind. The tuning split holds few tasks (about 160 single-turn ones); seen
 * with several values each, the model learns to copy arguments from the
 * request rather than to remember them. Values the text does not spell out
 * (defaults, enums, derived values) are left as they are.
 *
 * A fan-out variant turns a one-call request into the same request about two
 * or three values ("the weather in Boston and Denver"): one call per value,
 * all independent. BFCL's parallel category asks exactly this of a model, and
 * a small model tends to answer it with one call; the tuning split holds few
 * such tasks of its own.
 */
import type { ChatMessage, ToolSpec } from "../../common/src/index.js";
import type { TrainingTask } from "./build-samples.js";
import type { Rng } from "./simulate.js";

const CITIES = ["Boston", "Denver", "Lisbon", "Osaka", "Nairobi", "Toronto", "Melbourne", "Seattle", "Munich", "Lima", "Austin", "Dublin", "Prague", "Chicago", "Madrid", "Oslo", "Phoenix", "Hanoi", "Bogota", "Vienna", "Atlanta", "Cairo", "Zurich", "Portland"];
const COUNTRIES = ["Canada", "Brazil", "Japan", "Kenya", "Norway", "Peru", "Vietnam", "Spain", "Egypt", "Chile", "Ireland", "Poland", "Mexico", "India", "Australia", "Portugal"];
const PEOPLE = ["Maria Lopez", "James Carter", "Aiko Tanaka", "Omar Haddad", "Elena Petrova", "David Kim", "Grace Okafor", "Lucas Silva", "Sophie Martin", "Raj Patel", "Hannah Berg", "Noah Fischer"];
const COMPANIES = ["Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Wayne Enterprises", "Hooli", "Vandelay Industries", "Cyberdyne", "Soylent Co"];
const TICKERS = ["AAPL", "MSFT", "GOOGL", "AMZN", "NVDA", "TSLA", "META", "NFLX", "IBM", "ORCL", "INTC", "AMD"];

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** Matches `text` as a whole token: not inside a longer word or number. */
const standalone = (text: string): RegExp => new RegExp(`(?<![\\w.])${escapeRe(text)}(?![\\w]|\\.\\d)`, "g");

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;

/** A pool of same-kind strings for a parameter, judged by its name and the value's shape; undefined: leave it. */
function poolFor(param: string, value: string): readonly string[] | undefined {
  const p = param.toLowerCase();
  if (/^[A-Z]{2,5}$/.test(value) && /symbol|ticker|stock|company/.test(p)) return TICKERS;
  if (/country|nation/.test(p) && COUNTRIES.length > 0 && /^[A-Z][a-z]+( [A-Z][a-z]+)*$/.test(value)) return COUNTRIES;
  if (/city|location|place|destination|origin|town|venue|departure|arrival/.test(p) && /^[A-Z][a-z]+( [A-Z][a-z]+)*$/.test(value)) return CITIES;
  if (/company|brand|organi[sz]ation|employer/.test(p) && /^[A-Z]/.test(value)) return COMPANIES;
  if (/(^|_)(name|person|author|artist|player|director|actor|user|customer|recipient|patient|employee)(_|$)/.test(p) && /^[A-Z][a-z]+ [A-Z][a-z]+$/.test(value)) return PEOPLE;
  return undefined;
}

/** Another number of the same kind: a year for a year, the same count of digits and decimals otherwise. */
function otherNumber(n: number, rng: Rng): number {
  if (Number.isInteger(n)) {
    if (n >= 1900 && n <= 2100) return 1950 + Math.floor(rng() * 80);
    const digits = String(Math.abs(n)).length;
    const lo = digits === 1 ? 2 : 10 ** (digits - 1);
    const v = lo + Math.floor(rng() * (10 ** digits - lo));
    return n < 0 ? -v : v;
  }
  const decimals = (String(n).split(".")[1] ?? "").length;
  // A share or probability stays one.
  const v = n > 0 && n < 1 ? 0.05 + rng() * 0.9 : n * (0.5 + rng() * 1.5);
  return Number(v.toFixed(decimals));
}

function enumOf(tools: readonly ToolSpec[], tool: string, param: string): unknown[] | undefined {
  const props = tools.find((t) => t.name === tool)?.parameters["properties"] as Record<string, { enum?: unknown[] }> | undefined;
  return props?.[param]?.enum;
}

/** A replacement value of the same kind as `value` for `param`, absent from `text`; undefined when none fits. */
function otherValue(param: string, value: string | number, text: string, rng: Rng): string | number | undefined {
  if (typeof value === "number") {
    const v = otherNumber(value, rng);
    return v !== value && !standalone(String(v)).test(text) ? v : undefined;
  }
  const pool = poolFor(param, value)?.filter((x) => x !== value && !text.includes(x));
  return pool !== undefined && pool.length > 0 ? pick(rng, pool) : undefined;
}

/** Top-level primitive arguments of every call: [tool, parameter, value]. */
function argumentValues(task: TrainingTask): [string, string, string | number][] {
  return task.calls.flatMap((c) =>
    Object.entries(c.arguments).flatMap(([k, v]): [string, string, string | number][] => (typeof v === "number" || typeof v === "string" ? [[c.tool, k, v]] : [])),
  );
}

/**
 * A variant of `task` with new values, or undefined when no value can be
 * replaced. `n` numbers the variant (it is part of its id).
 */
export function argumentVariant(task: TrainingTask, rng: Rng, n: number): TrainingTask | undefined {
  const userText = task.messages.filter((m) => m.role === "user").map((m) => m.content).join("\n");
  const replace = new Map<string, { from: string | number; to: string | number }>();
  for (const [tool, param, value] of argumentValues(task)) {
    const key = `${typeof value}:${value}`;
    if (replace.has(key)) continue;
    if (enumOf(task.tools, tool, param)?.includes(value) === true) continue;
    const spelled = String(value);
    if (spelled.length === 0 || !standalone(spelled).test(userText)) continue;
    const to = otherValue(param, value, userText, rng);
    if (to !== undefined) replace.set(key, { from: value, to });
  }
  if (replace.size === 0) return undefined;
  const substituteText = (text: string): string => {
    let out = text;
    for (const { from, to } of replace.values()) out = out.replace(standalone(String(from)), String(to));
    return out;
  };
  const substituteValue = (v: unknown): unknown => {
    if (typeof v === "number" || typeof v === "string") return replace.get(`${typeof v}:${v}`)?.to ?? v;
    return v;
  };
  const messages: ChatMessage[] = task.messages.map((m) => (m.role === "user" ? { ...m, content: substituteText(m.content) } : m));
  return {
    ...task,
    id: `${task.id}~v${n}`,
    origin: "variant",
    messages,
    calls: task.calls.map((c) => ({ ...c, arguments: Object.fromEntries(Object.entries(c.arguments).map(([k, v]) => [k, substituteValue(v)])) })),
  };
}

/**
 * A fan-out variant of a one-call task: one argument the request spells out
 * once becomes two or three values ("A and B", "A, B and C"), and the call
 * becomes one call per value. Undefined when the task has several calls or
 * no such argument.
 */
export function fanOutVariant(task: TrainingTask, rng: Rng, n: number): TrainingTask | undefined {
  if (task.calls.length !== 1) return undefined;
  const call = task.calls[0]!;
  const users = task.messages.filter((m) => m.role === "user");
  if (users.length !== 1) return undefined;
  const text = users[0]!.content;
  const candidates = Object.entries(call.arguments).filter(
    ([k, v]) => (typeof v === "number" || typeof v === "string") && enumOf(task.tools, call.tool, k)?.includes(v) !== true && String(v) !== "" && (text.match(standalone(String(v)))?.length ?? 0) === 1,
  ) as [string, string | number][];
  const usable = candidates.filter(([k, v]) => otherValue(k, v, text, rng) !== undefined);
  if (usable.length === 0) return undefined;
  const [param, value] = pick(rng, usable);
  const values: (string | number)[] = [value];
  const count = rng() < 0.7 ? 2 : 3;
  for (let i = 1; i < count; i++) {
    const v = otherValue(param, value, text + " " + values.join(" "), rng);
    if (v === undefined || values.includes(v)) break;
    values.push(v);
  }
  if (values.length < 2) return undefined;
  const listed = values.length === 2 ? `${values[0]} and ${values[1]}` : `${values.slice(0, -1).join(", ")} and ${values.at(-1)}`;
  return {
    ...task,
    id: `${task.id}~f${n}`,
    origin: "fan-out",
    messages: task.messages.map((m) => (m.role === "user" ? { ...m, content: text.replace(standalone(String(value)), listed) } : m)),
    calls: values.map((v, i) => ({ ...call, id: `c${i}`, arguments: { ...call.arguments, [param]: v }, dependsOn: [] })),
  };
}
