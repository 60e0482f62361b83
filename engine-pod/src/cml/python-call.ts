/**
 * @module Parser for Python-style call bodies, `name(1, arg="x", flag=True,
 * n=None, lst=[1, 2], d={"k": 1})`: Python literals become JSON values
 * (True/False/None, single- or double-quoted strings, numbers, lists, tuples,
 * dicts). Errors are returned as values with a position the model can read.
 */

/** A parsed Python-style call: positional arguments first, then keywords. */
export interface PythonCall {
  name: string;
  positional: unknown[];
  keywords: [string, unknown][];
}

export type PythonCallResult = { ok: true; call: PythonCall } | { ok: false; message: string };

/** Thrown inside the parser only; converted to a result value at the boundary. */
class SyntaxFault extends Error {}

const NAME_RE = /[A-Za-z_][A-Za-z0-9_.-]*/y;
const IDENT_RE = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER_RE = /[-+]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?)/y;

class Cursor {
  pos = 0;
  constructor(readonly src: string) {}

  ws(): void {
    while (this.pos < this.src.length && /\s/.test(this.src[this.pos]!)) this.pos++;
  }

  peek(): string | undefined {
    return this.src[this.pos];
  }

  eat(ch: string): boolean {
    this.ws();
    if (this.src.startsWith(ch, this.pos)) {
      this.pos += ch.length;
      return true;
    }
    return false;
  }

  expect(ch: string): void {
    if (!this.eat(ch)) this.fail(`expected '${ch}'`);
  }

  match(re: RegExp): string | undefined {
    this.ws();
    re.lastIndex = this.pos;
    const m = re.exec(this.src);
    if (m === null || m[0] === "") return undefined;
    this.pos += m[0].length;
    return m[0];
  }

  fail(what: string): never {
    const near = this.src.slice(this.pos, this.pos + 12);
    throw new SyntaxFault(`${what} at offset ${this.pos}${near === "" ? " (end of body)" : ` near "${near}"`}`);
  }
}

const SIMPLE_ESCAPES: Record<string, string> = {
  n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", v: "\v", a: "\x07", "0": "\0",
  "\\": "\\", "'": "'", '"': '"', "\n": "",
};

function parseString(c: Cursor): string {
  c.ws();
  // Optional string prefix (r, b, u, f are accepted; only r changes parsing).
  let raw = false;
  const prefix = /[rRbBuUfF]{1,2}(?=['"])/y;
  prefix.lastIndex = c.pos;
  const p = prefix.exec(c.src);
  if (p !== null) {
    raw = /r/i.test(p[0]);
    c.pos += p[0].length;
  }
  const q = c.peek();
  if (q !== "'" && q !== '"') c.fail("expected a string");
  const triple = c.src.startsWith(q.repeat(3), c.pos);
  const close = triple ? q.repeat(3) : q;
  c.pos += close.length;
  let out = "";
  for (;;) {
    if (c.pos >= c.src.length) c.fail("unterminated string");
    if (c.src.startsWith(close, c.pos)) {
      c.pos += close.length;
      return out;
    }
    const ch = c.src[c.pos]!;
    if (ch === "\n" && !triple) c.fail("newline in string");
    if (ch === "\\" && !raw) {
      const e = c.src[c.pos + 1];
      if (e === undefined) c.fail("unterminated string");
      if (e in SIMPLE_ESCAPES) {
        out += SIMPLE_ESCAPES[e];
        c.pos += 2;
      } else if (e === "x" || e === "u" || e === "U") {
        const len = e === "x" ? 2 : e === "u" ? 4 : 8;
        const hex = c.src.slice(c.pos + 2, c.pos + 2 + len);
        if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) c.fail("bad escape");
        out += String.fromCodePoint(parseInt(hex, 16));
        c.pos += 2 + len;
      } else {
        out += "\\" + e; // Python keeps unknown escapes verbatim.
        c.pos += 2;
      }
      continue;
    }
    out += ch;
    c.pos++;
  }
}

function parseNumber(text: string, c: Cursor): number {
  const clean = text.replace(/_/g, "");
  const sign = clean.startsWith("-") ? -1 : 1;
  const body = clean.replace(/^[-+]/, "");
  const radix = /^0[xX]/.test(body) ? 16 : /^0[oO]/.test(body) ? 8 : /^0[bB]/.test(body) ? 2 : 10;
  const n = radix === 10 ? Number(body) : parseInt(body.slice(2), radix);
  if (!Number.isFinite(n)) c.fail(`bad number "${text}"`);
  return sign * n;
}

function parseSequence(c: Cursor, close: string): unknown[] {
  const items: unknown[] = [];
  while (!c.eat(close)) {
    items.push(parseValue(c));
    if (!c.eat(",")) {
      c.expect(close);
      break;
    }
  }
  return items;
}

function parseDict(c: Cursor): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  while (!c.eat("}")) {
    const key = parseValue(c);
    if (typeof key !== "string" && typeof key !== "number" && typeof key !== "boolean") c.fail("dict keys must be strings or numbers");
    c.expect(":");
    out[String(key)] = parseValue(c);
    if (!c.eat(",")) {
      c.expect("}");
      break;
    }
  }
  return out;
}

const CONSTANTS: Record<string, unknown> = {
  True: true, False: false, None: null,
  // JSON spellings: small models mix the two styles.
  true: true, false: false, null: null,
};

/** One Python literal as a JSON value. */
function parseValue(c: Cursor): unknown {
  c.ws();
  const ch = c.peek();
  if (ch === undefined) c.fail("expected a value");
  if (ch === "[") {
    c.pos++;
    return parseSequence(c, "]");
  }
  if (ch === "(") {
    c.pos++;
    return parseSequence(c, ")");
  }
  if (ch === "{") {
    c.pos++;
    return parseDict(c);
  }
  if (ch === "'" || ch === '"' || /[rRbBuUfF]/.test(ch) && /^[rRbBuUfF]{1,2}['"]/.test(c.src.slice(c.pos, c.pos + 3))) {
    // Adjacent string literals concatenate, as in Python.
    let s = parseString(c);
    for (;;) {
      c.ws();
      const next = c.peek();
      if (next !== "'" && next !== '"') return s;
      s += parseString(c);
    }
  }
  const num = c.match(NUMBER_RE);
  if (num !== undefined) return parseNumber(num, c);
  const word = c.match(IDENT_RE);
  if (word !== undefined && Object.hasOwn(CONSTANTS, word)) return CONSTANTS[word];
  if (word !== undefined) c.fail(`unknown name "${word}" (only literals are allowed)`);
  return c.fail("expected a value");
}

/** Parses `name(args)`; the whole body must be one call. */
export function parsePythonCall(body: string): PythonCallResult {
  const c = new Cursor(body);
  try {
    const name = c.match(NAME_RE) ?? c.fail("expected a tool name");
    c.expect("(");
    const positional: unknown[] = [];
    const keywords: [string, unknown][] = [];
    while (!c.eat(")")) {
      // `ident =` (but not `==`) starts a keyword argument.
      const save = c.pos;
      const ident = c.match(IDENT_RE);
      c.ws();
      if (ident !== undefined && c.peek() === "=" && c.src[c.pos + 1] !== "=") {
        c.pos++;
        if (keywords.some(([k]) => k === ident)) c.fail(`keyword argument "${ident}" repeated`);
        keywords.push([ident, parseValue(c)]);
      } else {
        c.pos = save;
        if (keywords.length > 0) c.fail("positional argument after keyword argument");
        positional.push(parseValue(c));
      }
      if (!c.eat(",")) {
        c.expect(")");
        break;
      }
    }
    c.ws();
    if (c.pos < body.length) c.fail("unexpected text after the call");
    return { ok: true, call: { name, positional, keywords } };
  } catch (err) {
    if (err instanceof SyntaxFault) return { ok: false, message: err.message };
    throw err;
  }
}
