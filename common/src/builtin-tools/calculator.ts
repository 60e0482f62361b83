/**
 * @module The `calculator` builtin: a safe arithmetic evaluator (a
 * recursive-descent parser over a fixed grammar; no `eval`, no property
 * access). Numbers, `+ - * / %`, `^` (right-associative power), unary signs,
 * parentheses, the constants `pi` and `e`, and the functions `sqrt abs min
 * max round floor ceil ln log10 exp sin cos tan`.
 */
import { BuiltinToolError, requireArg, type BuiltinTool } from "./builtin-tool.js";

export const CALCULATOR_TOOL_NAME = "calculator";
/** Longest expression accepted; bounds parse time and recursion depth. */
export const CALCULATOR_MAX_LENGTH = 1000;

const CONSTANTS: ReadonlyMap<string, number> = new Map([
  ["pi", Math.PI],
  ["e", Math.E],
]);

/** Functions by name, with their arity (`-1`: one or more arguments). */
const FUNCTIONS: ReadonlyMap<string, { arity: number; fn: (...xs: number[]) => number }> = new Map([
  ["sqrt", { arity: 1, fn: Math.sqrt }],
  ["abs", { arity: 1, fn: Math.abs }],
  ["round", { arity: 1, fn: Math.round }],
  ["floor", { arity: 1, fn: Math.floor }],
  ["ceil", { arity: 1, fn: Math.ceil }],
  ["ln", { arity: 1, fn: Math.log }],
  ["log10", { arity: 1, fn: Math.log10 }],
  ["exp", { arity: 1, fn: Math.exp }],
  ["sin", { arity: 1, fn: Math.sin }],
  ["cos", { arity: 1, fn: Math.cos }],
  ["tan", { arity: 1, fn: Math.tan }],
  ["min", { arity: -1, fn: Math.min }],
  ["max", { arity: -1, fn: Math.max }],
]);

type Token = { kind: "num"; value: number; pos: number } | { kind: "id"; name: string; pos: number } | { kind: "op"; op: string; pos: number };

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (/[0-9.]/.test(c)) {
      const m = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i));
      if (!m) throw new BuiltinToolError(`calculator: bad number at position ${i}`);
      tokens.push({ kind: "num", value: Number(m[0]), pos: i });
      i += m[0].length;
    } else if (/[a-zA-Z_]/.test(c)) {
      const m = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(src.slice(i))!;
      tokens.push({ kind: "id", name: m[0].toLowerCase(), pos: i });
      i += m[0].length;
    } else if (src.startsWith("**", i)) {
      tokens.push({ kind: "op", op: "^", pos: i });
      i += 2;
    } else if ("+-*/%^(),".includes(c)) {
      tokens.push({ kind: "op", op: c, pos: i });
      i++;
    } else {
      throw new BuiltinToolError(`calculator: unexpected character "${c}" at position ${i}`);
    }
  }
  return tokens;
}

/** Evaluates an arithmetic expression; throws {@link BuiltinToolError} with a readable message. */
export function evaluateExpression(expression: string): number {
  if (expression.length > CALCULATOR_MAX_LENGTH) {
    throw new BuiltinToolError(`calculator: expression longer than ${CALCULATOR_MAX_LENGTH} characters`);
  }
  const tokens = tokenize(expression);
  let at = 0;
  const peek = (): Token | undefined => tokens[at];
  const isOp = (op: string): boolean => {
    const t = tokens[at];
    return t !== undefined && t.kind === "op" && t.op === op;
  };
  const expect = (op: string): void => {
    if (!isOp(op)) {
      const t = peek();
      throw new BuiltinToolError(`calculator: expected "${op}" ${t === undefined ? "at end of expression" : `at position ${t.pos}`}`);
    }
    at++;
  };

  // expr := term (("+"|"-") term)*
  const expr = (): number => {
    let value = term();
    while (isOp("+") || isOp("-")) {
      const op = (tokens[at++] as { op: string }).op;
      const rhs = term();
      value = op === "+" ? value + rhs : value - rhs;
    }
    return value;
  };
  // term := unary (("*"|"/"|"%") unary)*
  const term = (): number => {
    let value = unary();
    while (isOp("*") || isOp("/") || isOp("%")) {
      const op = (tokens[at++] as { op: string }).op;
      const rhs = unary();
      if ((op === "/" || op === "%") && rhs === 0) throw new BuiltinToolError("calculator: division by zero");
      value = op === "*" ? value * rhs : op === "/" ? value / rhs : value % rhs;
    }
    return value;
  };
  // unary := ("+"|"-") unary | power
  const unary = (): number => {
    if (isOp("-")) {
      at++;
      return -unary();
    }
    if (isOp("+")) {
      at++;
      return unary();
    }
    return power();
  };
  // power := primary ("^" unary)?   (right-associative; -2^2 = -4, 2^-1 = 0.5)
  const power = (): number => {
    const base = primary();
    if (isOp("^")) {
      at++;
      return base ** unary();
    }
    return base;
  };
  const primary = (): number => {
    const t = peek();
    if (t === undefined) throw new BuiltinToolError("calculator: unexpected end of expression");
    if (t.kind === "num") {
      at++;
      return t.value;
    }
    if (t.kind === "op" && t.op === "(") {
      at++;
      const value = expr();
      expect(")");
      return value;
    }
    if (t.kind === "id") {
      at++;
      const constant = CONSTANTS.get(t.name);
      if (constant !== undefined) return constant;
      const fn = FUNCTIONS.get(t.name);
      if (fn === undefined) throw new BuiltinToolError(`calculator: unknown name "${t.name}" at position ${t.pos}`);
      expect("(");
      const args = [expr()];
      while (isOp(",")) {
        at++;
        args.push(expr());
      }
      expect(")");
      if (fn.arity >= 0 && args.length !== fn.arity) {
        throw new BuiltinToolError(`calculator: ${t.name}() takes ${fn.arity} argument(s), got ${args.length}`);
      }
      return fn.fn(...args);
    }
    throw new BuiltinToolError(`calculator: unexpected "${t.op}" at position ${t.pos}`);
  };

  if (tokens.length === 0) throw new BuiltinToolError("calculator: empty expression");
  const value = expr();
  const rest = peek();
  if (rest !== undefined) throw new BuiltinToolError(`calculator: unexpected input at position ${rest.pos}`);
  if (!Number.isFinite(value)) throw new BuiltinToolError(`calculator: result is not a finite number (${value})`);
  return value;
}

/** Formats a result without binary noise (0.1+0.2 → 0.3). */
export function formatNumber(value: number): string {
  return String(Number.isInteger(value) ? value : Number(value.toPrecision(12)));
}

export function createCalculatorTool(): BuiltinTool {
  return {
    spec: {
      name: CALCULATOR_TOOL_NAME,
      description: "Evaluates an arithmetic expression, e.g. \"(2 + 3) * sqrt(16) / 4\".",
      parameters: {
        type: "object",
        properties: {
          expression: { type: "string", description: "Arithmetic: + - * / % ^, parentheses, pi, e, sqrt, abs, min, max, round, floor, ceil, ln, log10, exp, sin, cos, tan." },
        },
        required: ["expression"],
        additionalProperties: false,
      },
      estimatedLatencyMs: 1,
      speculative: true,
      idempotent: true,
    },
    run: async (args, signal) => {
      signal.throwIfAborted();
      return formatNumber(evaluateExpression(requireArg(CALCULATOR_TOOL_NAME, args, "expression", "string")));
    },
  };
}
