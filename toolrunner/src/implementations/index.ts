/**
 * @module Builds each configured tool's implementation from the spec file.
 */
import type { RunnerToolSpec, ToolRunnerConfig } from "../../../common/src/protocol/index.js";
import { builtinNames, createBuiltinImpl } from "./builtin.js";
import { createHttpImpl } from "./http.js";
import { createMcpImpl, McpClients } from "./mcp.js";
import type { ToolImpl } from "./tool-impl.js";

export type { ToolImpl, ToolRunContext } from "./tool-impl.js";
export { ToolFailure } from "./tool-impl.js";

export interface RunnableTool {
  spec: RunnerToolSpec;
  impl: ToolImpl;
}

export interface ToolSet {
  tools: Map<string, RunnableTool>;
  close(): Promise<void>;
}

/** Tools by name; throws with a clear message for a builtin that does not exist. */
export function createToolSet(config: ToolRunnerConfig, retries: number): ToolSet {
  const mcp = new McpClients();
  const tools = new Map<string, RunnableTool>();
  for (const spec of config.tools) {
    const impl = spec.implementation;
    let run: ToolImpl;
    switch (impl.type) {
      case "builtin": {
        const name = impl.builtin ?? spec.name;
        const b = createBuiltinImpl(name, spec, impl.recordings, impl.fallback);
        if (b === null) throw new Error(`tool "${spec.name}": no builtin named "${name}" (known: ${builtinNames().join(", ")})`);
        run = b;
        break;
      }
      case "http":
        run = createHttpImpl({ url: impl.url, retries, ...(impl.method ? { method: impl.method } : {}), ...(impl.headers ? { headers: impl.headers } : {}) });
        break;
      case "mcp":
        run = createMcpImpl({ url: impl.url, tool: impl.tool ?? spec.name, ...(impl.headers ? { headers: impl.headers } : {}) }, mcp);
        break;
    }
    if (tools.has(spec.name)) throw new Error(`tool "${spec.name}" is defined twice`);
    tools.set(spec.name, { spec, impl: run });
  }
  return { tools, close: () => mcp.close() };
}
