/**
 * @module The BFCL AST scorer on hand-worked entries (shapes copied from
 * BFCL's simple and parallel categories): the right call, a wrong argument,
 * an extra call, a missing call, and the finer rules (omittable optionals,
 * string normalisation, int for float, any order for parallel answers).
 */
import t from "tap";
import type { ToolSpec } from "../../common/src/index.js";
import { normalizeString, scoreCalls, type PossibleCall } from "../../bench/accuracy/ast-scorer.js";

// simple_python_0: calculate_triangle_area(base=10, height=5, unit omitted or "units").
const triangle: ToolSpec = {
  name: "calculate_triangle_area",
  description: "Calculate the area of a triangle given its base and height.",
  parameters: {
    type: "object",
    properties: { base: { type: "integer" }, height: { type: "integer" }, unit: { type: "string" } },
    required: ["base", "height"],
  },
};
const triangleAnswer: PossibleCall[] = [{ tool: "calculate_triangle_area", params: { base: [10], height: [5], unit: ["units", ""] } }];

// parallel_0: spotify.play twice, in any order.
const play: ToolSpec = {
  name: "spotify.play",
  description: "Play specific tracks from a given artist for a specific time duration.",
  parameters: { type: "object", properties: { artist: { type: "string" }, duration: { type: "number" } }, required: ["artist", "duration"] },
};
const playAnswer: PossibleCall[] = [
  { tool: "spotify.play", params: { artist: ["Taylor Swift"], duration: [20] } },
  { tool: "spotify.play", params: { artist: ["Maroon 5"], duration: [15] } },
];

t.test("the right call is valid, with or without its omittable optional", async (t) => {
  t.same(scoreCalls([triangle], [{ tool: "calculate_triangle_area", arguments: { base: 10, height: 5 } }], triangleAnswer), { valid: true });
  t.same(scoreCalls([triangle], [{ tool: "calculate_triangle_area", arguments: { base: 10, height: 5, unit: "Units" } }], triangleAnswer), { valid: true }, "strings compare normalised");
});

t.test("a wrong argument value, a wrong type, an unknown parameter, a missing required one", async (t) => {
  t.match(scoreCalls([triangle], [{ tool: "calculate_triangle_area", arguments: { base: 10, height: 6 } }], triangleAnswer), { valid: false, kind: "value_error" });
  t.match(scoreCalls([triangle], [{ tool: "calculate_triangle_area", arguments: { base: "10", height: 5 } }], triangleAnswer), { valid: false, kind: "type_error" });
  t.match(scoreCalls([triangle], [{ tool: "calculate_triangle_area", arguments: { base: 10, height: 5, color: "red" } }], triangleAnswer), { valid: false, kind: "unexpected_parameter" });
  t.match(scoreCalls([triangle], [{ tool: "calculate_triangle_area", arguments: { base: 10 } }], triangleAnswer), { valid: false, kind: "missing_required" });
  t.match(scoreCalls([triangle], [{ tool: "calculate_triangle_area", arguments: { base: 10, height: 5, unit: "cm" } }], triangleAnswer), { valid: false, kind: "value_error" });
  t.match(scoreCalls([triangle], [{ tool: "triangle_area", arguments: { base: 10, height: 5 } }], triangleAnswer), { valid: false, kind: "wrong_function" });
});

t.test("an extra call and a missing call are wrong counts", async (t) => {
  const right = { tool: "calculate_triangle_area", arguments: { base: 10, height: 5 } };
  t.match(scoreCalls([triangle], [right, right], triangleAnswer), { valid: false, kind: "wrong_count" }, "extra call");
  t.match(scoreCalls([triangle], [], triangleAnswer), { valid: false, kind: "wrong_count" }, "no call");
  t.match(scoreCalls([play], [{ tool: "spotify.play", arguments: { artist: "Taylor Swift", duration: 20 } }], playAnswer), { valid: false, kind: "wrong_count" }, "one of two parallel calls missing");
});

t.test("parallel answers match in any order; an integer passes for a number", async (t) => {
  const calls = [
    { tool: "spotify.play", arguments: { artist: "maroon 5", duration: 15 } },
    { tool: "spotify.play", arguments: { artist: "Taylor Swift", duration: 20 } },
  ];
  t.same(scoreCalls([play], calls, playAnswer), { valid: true });
  const swapped = [
    { tool: "spotify.play", arguments: { artist: "Maroon 5", duration: 20 } },
    { tool: "spotify.play", arguments: { artist: "Taylor Swift", duration: 15 } },
  ];
  t.match(scoreCalls([play], swapped, playAnswer), { valid: false, kind: "value_error" }, "durations crossed between the calls");
});

t.test("a parameter the answer requires but the schema leaves optional must be given", async (t) => {
  const answer: PossibleCall[] = [{ tool: "calculate_triangle_area", params: { base: [10], height: [5], unit: ["cm"] } }];
  t.match(scoreCalls([triangle], [{ tool: "calculate_triangle_area", arguments: { base: 10, height: 5 } }], answer), { valid: false, kind: "missing_optional" });
});

t.test("upstream's string normalisation", async (t) => {
  t.equal(normalizeString("New York, NY"), "newyorkny");
  t.equal(normalizeString("it's"), 'it"s');
});
