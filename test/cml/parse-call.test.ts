import t from "tap";
import { CML, type ToolSpec } from "../../common/src/index.js";
import { formatErrorInterrupt, parseCallBody, parsePythonCall } from "../../engine-pod/src/cml/index.js";

const TOOLS: ToolSpec[] = [
  {
    name: "add",
    description: "Adds two numbers.",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"], additionalProperties: false },
  },
  {
    name: "search",
    description: "Web search.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string" },
        limit: { type: "integer", minimum: 1 },
        safe: { type: "boolean" },
        lang: { type: ["string", "null"] },
        tags: { type: "array", items: { type: "string" } },
        filters: { type: "object", properties: { k: { type: "integer" } } },
        since: { type: "string", format: "date" },
        mode: { type: "string", enum: ["fast", "deep"] },
      },
      required: ["query"],
    },
  },
  // BFCL-style type names.
  { name: "geo.area", description: "", parameters: { type: "dict", properties: { r: { type: "float" }, pts: { type: "tuple", items: { type: "integer" } }, x: { type: "any" } }, required: ["r"] } },
];

t.test("JSON style", async (t) => {
  t.same(parseCallBody(' {"name": "add", "arguments": {"a": 1, "b": 2.5}} ', TOOLS), { ok: true, tool: "add", arguments: { a: 1, b: 2.5 }, style: "json" });
  t.same(parseCallBody('{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}', TOOLS), { ok: true, tool: "add", arguments: { a: 1, b: 2 }, style: "json" }, "arguments as a JSON string (OpenAI)");
  t.match(parseCallBody('```json\n{"name": "search", "arguments": {"query": "x", "tags": ["a"], "filters": {"k": 3}}}\n```', TOOLS), { ok: true, tool: "search" });
});

t.test("Python style", async (t) => {
  t.same(parseCallBody(`search(query='it''s', limit=3, safe=True, lang=None, tags=["a", 'b'], filters={"k": 1}, mode="deep")`, TOOLS), {
    ok: true, tool: "search", style: "python",
    arguments: { query: "its", limit: 3, safe: true, lang: null, tags: ["a", "b"], filters: { k: 1 }, mode: "deep" },
  });
  t.same(parseCallBody("add(1, b=-2e3)", TOOLS), { ok: true, tool: "add", arguments: { a: 1, b: -2000 }, style: "python" }, "positional args follow the schema's property order");
  t.same(parseCallBody("add(0x10, 1_000)", TOOLS), { ok: true, tool: "add", arguments: { a: 16, b: 1000 }, style: "python" });
  t.same(parseCallBody("geo.area(r=1.5, pts=(1, 2,), x={'a': [None, False]})", TOOLS), {
    ok: true, tool: "geo.area", style: "python", arguments: { r: 1.5, pts: [1, 2], x: { a: [null, false] } },
  }, "tuples become arrays; BFCL dict/float/tuple/any types are understood");
  t.same(parseCallBody('search("a\\n\\u00e9\\x41")', TOOLS), { ok: true, tool: "search", arguments: { query: "a\né\x41" }, style: "python" });
  t.same(parsePythonCall("f()"), { ok: true, call: { name: "f", positional: [], keywords: [] } });
});

t.test("malformed_call", async (t) => {
  const cases = [
    "", "   ", '{"name": "add", "arguments": {', '{"arguments": {}}', '["add"]', '{"name": "add", "arguments": [1]}',
    "add(1", "add(a=1, 2)", "add(a=1, a=2)", "add(a=foo)", "add(a='x)", "add() trailing", "(1)", "add(a=1 b=2)",
  ];
  for (const body of cases) {
    const r = parseCallBody(body, TOOLS);
    t.match(r, { ok: false, code: "malformed_call", message: /^malformed_call: / }, JSON.stringify(body));
  }
  t.match(parseCallBody("add(a=foo)", TOOLS), { message: /unknown name "foo"/ });
});

t.test("unknown_tool lists the known tools", async (t) => {
  t.same(parseCallBody('{"name": "mul", "arguments": {}}', TOOLS), { ok: false, code: "unknown_tool", message: 'unknown_tool: "mul" is not a tool (available: add, search, geo.area)' });
  t.match(parseCallBody("mul(1, 2)", TOOLS), { ok: false, code: "unknown_tool" });
});

t.test("invalid_arguments names the offending argument", async (t) => {
  t.same(parseCallBody('{"name": "add", "arguments": {"a": "1", "b": 2}}', TOOLS), { ok: false, code: "invalid_arguments", message: 'invalid_arguments: "a" must be number' });
  t.match(parseCallBody("add(1)", TOOLS), { code: "invalid_arguments", message: /required property 'b'/ });
  t.match(parseCallBody("add(1, 2, 3)", TOOLS), { code: "invalid_arguments", message: /takes 2 argument/ });
  t.match(parseCallBody("add(1, 2, c=3)", TOOLS), { code: "invalid_arguments", message: /unknown field "c"/ });
  t.match(parseCallBody("add(1, a=3)", TOOLS), { code: "invalid_arguments", message: /both by position and by keyword/ });
  t.match(parseCallBody("search(query='x', limit=0)", TOOLS), { code: "invalid_arguments", message: /"limit" must be >= 1/ });
  t.match(parseCallBody("search(query='x', mode='slow')", TOOLS), { code: "invalid_arguments", message: /"mode" must be one of "fast", "deep"/ });
  t.match(parseCallBody("search(query='x', since='2024-13-40')", TOOLS), { code: "invalid_arguments", message: /"since" must match format "date"/ }, "ajv-formats is active");
  t.match(parseCallBody("search(query='x', tags=['a', 1])", TOOLS), { code: "invalid_arguments", message: /"tags\[1\]" must be string/ });
  t.match(parseCallBody("search(query='x', filters={'k': 'v'})", TOOLS), { code: "invalid_arguments", message: /"filters\.k" must be integer/ });
  const broken: ToolSpec = { name: "broken", description: "", parameters: { type: "object", properties: { a: { type: "nonsense" } } } };
  t.match(parseCallBody("broken(a=1)", [broken]), { ok: false, code: "invalid_arguments", message: /invalid parameters schema/ }, "a broken tool schema is an error value");
});

t.test("an invalid call becomes a readable error interrupt", async (t) => {
  const r = parseCallBody('{"name": "add", "arguments": {"a": "1", "b": 2}}', TOOLS);
  if (r.ok) throw new Error("expected failure");
  t.equal(formatErrorInterrupt("c1", r), `${CML.INTR}c1${CML.HEAD}error: invalid_arguments: "a" must be number${CML.END}`);
  t.equal(formatErrorInterrupt("c2", { code: "tool_failed", message: "boom\nline2" }), `${CML.INTR}c2${CML.HEAD}error: tool_failed: boom line2${CML.END}`);
});
