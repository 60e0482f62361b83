/**
 * @module The fixed evaluation-split task the real-model tests run (BFCL
 * simple_python_11, never trained on): its request and its function, as
 * BFCL gives them, and the one right call.
 */
import type { ToolSpec } from "../../common/src/index.js";

export const TRIANGLE_REQUEST = "What is the area of a triangle with base of 10 units and height of 5 units?";

export const TRIANGLE: ToolSpec = {
  name: "calculate_triangle_area",
  description: "Calculate the area of a triangle using its base and height.",
  parameters: {
    type: "object",
    properties: { base: { type: "integer", description: "The length of the base of the triangle." }, height: { type: "integer", description: "The height of the triangle from the base." } },
    required: ["base", "height"],
  },
  estimatedLatencyMs: 200,
};

export const TRIANGLE_CALL = { tool: "calculate_triangle_area", arguments: { base: 10, height: 5 } };
