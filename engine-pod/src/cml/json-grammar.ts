/**
 * @module JSON Schema → GBNF (llama.cpp grammars): the rule builder that the
 * call grammar (a call's arguments) and the answer grammar (structured
 * outputs) share, with bounds that keep generation finite for a model that
 * never closes a string or an array.
 */
import type { CmlMarker, JsonSchema } from "../../../common/src/index.js";
import { normalizeSchema } from "./schema.js";

export interface JsonGrammarBounds {
  /**
   * Upper bounds that keep generation finite even for a model that never
   * closes a string or an array (random weights, small models). Schema
   * `maxLength`/`maxItems` take precedence when smaller. Unbounded by default.
   */
  maxStringLength?: number;
  maxArrayItems?: number;
  /** Nesting depth of free-form JSON values (`{}` or unknown schemas); default 3. */
  maxGenericDepth?: number;
}

/** A GBNF string literal for `text`. */
export function gbnfLiteral(text: string): string {
  return `"${text.replace(/[\\"\n\r\t]/g, (c) => ({ "\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t" })[c]!)}"`;
}

/** How `marker` is written in GBNF for a model with (or without) that control token. */
export function markerGbnf(marker: CmlMarker, markerTokens?: ReadonlyMap<number, CmlMarker>): string {
  for (const [id, m] of markerTokens ?? []) if (m === marker) return `<[${id}]>`;
  return gbnfLiteral(marker);
}

/** `{min,max}` repetition of `item`, in forms every GBNF version accepts. */
export function repeat(item: string, min: number, max: number | undefined): string {
  if (max === undefined) return min === 0 ? `${item}*` : min === 1 ? `${item}+` : `${item}{${min},}`;
  if (min === 0 && max === 1) return `${item}?`;
  return `${item}{${min},${max}}`;
}

const PRIMITIVES: Record<string, string> = {
  ws: '" "?',
  // Code points JSON can carry: no surrogates and nothing past U+10FFFF, which llama.cpp's UTF-8 decoder would otherwise accept from byte tokens.
  char: '[^"\\\\\\x7F\\x00-\\x1F\\uD800-\\uDFFF\\U00110000-\\U001FFFFF] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])',
  integer: '"-"? ("0" | [1-9] [0-9]{0,15})',
  number: 'integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?',
  boolean: '"true" | "false"',
  null: '"null"',
};

export class GrammarBuilder {
  private readonly rules = new Map<string, string>();
  private readonly byBody = new Map<string, string>();

  constructor(private readonly opts: JsonGrammarBounds) {}

  /** Adds a rule (deduplicated by body) and returns its name. */
  rule(hint: string, body: string): string {
    const existing = this.byBody.get(body);
    if (existing !== undefined) return existing;
    const base = hint.replace(/[^a-zA-Z0-9-]+/g, "-").replace(/^-+|-+$/g, "").toLowerCase() || "r";
    let name = base;
    for (let i = 2; this.rules.has(name) || name === "root"; i++) name = `${base}-${i}`;
    this.rules.set(name, body);
    this.byBody.set(body, name);
    return name;
  }

  /** A primitive rule by name, defined on first use. */
  prim(name: keyof typeof PRIMITIVES): string {
    if (!this.rules.has(name)) {
      if (name === "number") this.prim("integer");
      this.rules.set(name, PRIMITIVES[name]!);
    }
    return name;
  }

  string(minLength = 0, maxLength?: number): string {
    const cap = this.opts.maxStringLength;
    const max = maxLength === undefined ? cap : cap === undefined ? maxLength : Math.min(maxLength, cap);
    const char = this.prim("char");
    const body = `"\\"" ${repeat(char, Math.min(minLength, max ?? minLength), max)} "\\""`;
    return minLength === 0 && max === undefined ? this.rule("string", body) : this.rule(`string-${minLength}-${max ?? "n"}`, body);
  }

  /** Free-form JSON value nested at most `depth` levels. */
  generic(depth = this.opts.maxGenericDepth ?? 3): string {
    const scalars = [this.string(), this.prim("number"), this.prim("boolean"), this.prim("null")];
    if (depth <= 0) return this.rule("scalar", scalars.join(" | "));
    const inner = this.generic(depth - 1);
    const ws = this.prim("ws");
    const obj = this.rule(`object-any-${depth}`, `"{" ${ws} ( ${this.string()} ${ws} ":" ${ws} ${inner} ${this.more(`"," ${ws} ${this.string()} ${ws} ":" ${ws} ${inner}`)} )? ${ws} "}"`);
    const arr = this.rule(`array-any-${depth}`, `"[" ${ws} ( ${inner} ${this.more(`"," ${ws} ${inner}`)} )? ${ws} "]"`);
    return this.rule(`value-${depth}`, [obj, arr, ...scalars].join(" | "));
  }

  /** Further list elements, bounded by `maxArrayItems` when set. */
  private more(element: string, min = 0, max?: number): string {
    const ws = this.prim("ws");
    const cap = this.opts.maxArrayItems;
    const hi = max ?? cap;
    const bounded = hi === undefined ? undefined : Math.max(0, (cap === undefined ? hi : Math.min(hi, cap)) - 1);
    return repeat(`(${ws} ${element})`, Math.max(0, min - 1), bounded);
  }

  /** The rule for a value matching `schema` (already normalised). */
  schema(s: JsonSchema, hint: string): string {
    if ("const" in s) return this.rule(`${hint}-const`, gbnfLiteral(JSON.stringify(s["const"])));
    if (Array.isArray(s["enum"])) {
      const alts = s["enum"].map((v) => gbnfLiteral(JSON.stringify(v)));
      return this.rule(`${hint}-enum`, alts.length > 0 ? alts.join(" | ") : '"null"');
    }
    for (const key of ["anyOf", "oneOf"] as const) {
      const alts = s[key];
      if (Array.isArray(alts) && alts.length > 0) {
        return this.rule(hint, alts.map((a, i) => this.schema(asSchema(a), `${hint}-${i}`)).join(" | "));
      }
    }
    const allOf = s["allOf"];
    if (Array.isArray(allOf) && allOf.length === 1) return this.schema(asSchema(allOf[0]), hint);
    const type = s["type"];
    if (Array.isArray(type)) {
      if (type.length === 0) return this.generic();
      return this.rule(hint, type.map((t) => this.schema({ ...s, type: t }, `${hint}-${String(t)}`)).join(" | "));
    }
    const ws = this.prim("ws");
    switch (type) {
      case "string":
        return this.string(num(s["minLength"]) ?? 0, num(s["maxLength"]));
      case "integer":
        return this.prim("integer");
      case "number":
        return this.prim("number");
      case "boolean":
        return this.prim("boolean");
      case "null":
        return this.prim("null");
      case "array": {
        const items = isSchema(s["items"]) ? this.schema(normalizeSchema(s["items"]), `${hint}-item`) : this.generic();
        const min = num(s["minItems"]) ?? 0;
        const max = num(s["maxItems"]);
        const list = `${items} ${this.more(`"," ${ws} ${items}`, min, max)}`;
        return this.rule(hint, `"[" ${ws} ${min > 0 ? list : `( ${list} )?`} ${ws} "]"`);
      }
      case "object":
        return this.object(s, hint);
      default:
        // No type: an object if it has properties, else any JSON value.
        return isSchema(s["properties"]) ? this.object(s, hint) : this.generic();
    }
  }

  /**
   * Properties in schema order, required ones mandatory, optional ones
   * skippable; a comma goes before every property but the first present.
   */
  private object(s: JsonSchema, hint: string): string {
    const ws = this.prim("ws");
    const props = isSchema(s["properties"]) ? Object.entries(s["properties"]) : [];
    if (props.length === 0) {
      const extra = s["additionalProperties"];
      if (extra === false) return this.rule(`${hint}-empty`, `"{" ${ws} "}"`);
      const value = isSchema(extra) && Object.keys(extra).length > 0 ? this.schema(normalizeSchema(extra), `${hint}-value`) : this.generic();
      const kv = `${this.string()} ${ws} ":" ${ws} ${value}`;
      return this.rule(hint, `"{" ${ws} ( ${kv} ${this.more(`"," ${ws} ${kv}`)} )? ${ws} "}"`);
    }
    const required = new Set(Array.isArray(s["required"]) ? s["required"].map(String) : []);
    const kvs = props.map(([key, sub]) => `${gbnfLiteral(JSON.stringify(key))} ${ws} ":" ${ws} ${this.schema(isSchema(sub) ? normalizeSchema(sub) : {}, `${hint}-${key}`)}`);
    // seq(i, first): properties i.. where `first` means nothing has been written yet ("" when none remain).
    const memo = new Map<string, string>();
    const seq = (i: number, first: boolean): string => {
      if (i === props.length) return "";
      const key = `${i}-${first}`;
      const hit = memo.get(key);
      if (hit !== undefined) return hit;
      const kv = first ? kvs[i]! : `"," ${ws} ${kvs[i]!}`;
      const present = `${kv} ${seq(i + 1, false)}`.trim();
      let body = present;
      if (!required.has(props[i]![0])) {
        const absent = seq(i + 1, first);
        body = absent === "" ? `( ${present} )?` : `( ${present} ) | ${absent}`;
      }
      const name = this.rule(`${hint}-p${i}${first ? "f" : "n"}`, body);
      memo.set(key, name);
      return name;
    };
    return this.rule(hint, `"{" ${ws} ${seq(0, true)} ${ws} "}"`);
  }

  render(root: string): string {
    const lines = [`root ::= ${root}`];
    for (const [name, body] of this.rules) lines.push(`${name} ::= ${body}`);
    return lines.join("\n") + "\n";
  }
}

export function isSchema(v: unknown): v is JsonSchema {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function asSchema(v: unknown): JsonSchema {
  return isSchema(v) ? normalizeSchema(v) : {};
}

function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : undefined;
}
