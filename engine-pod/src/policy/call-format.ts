/**
 * @module Call bodies as a scripted policy writes them: JSON
 * (`{"name": .., "arguments": {..}}`) or Python (`name(a=1, b="x")`).
 */

/** The body of a call block in the chosen style. */
export function formatCallBody(tool: string, args: Record<string, unknown>, style: "json" | "python"): string {
  if (style === "json") return JSON.stringify({ name: tool, arguments: args });
  const parts = Object.entries(args).map(([k, v]) => `${k}=${pythonLiteral(v)}`);
  return `${tool}(${parts.join(", ")})`;
}

function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number" || typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${JSON.stringify(k)}: ${pythonLiteral(v)}`);
    return `{${entries.join(", ")}}`;
  }
  return JSON.stringify(String(value));
}
