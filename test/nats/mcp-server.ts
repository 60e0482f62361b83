/**
 * @module A real Model Context Protocol server for tests, built with the
 * official SDK's server classes and served over Streamable HTTP (stateless:
 * one server + transport per request) on a free loopback port.
 */
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

/** Tools: `add` {a, b} → the sum; `explode` → an `isError` result; `crash` → a thrown error. */
function mcpServer(): Server {
  const server = new Server({ name: "interlace-test-mcp", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: "add", description: "adds", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } } },
      { name: "explode", description: "fails", inputSchema: { type: "object" } },
      { name: "crash", description: "throws", inputSchema: { type: "object" } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const args = (req.params.arguments ?? {}) as { a?: number; b?: number };
    switch (req.params.name) {
      case "add":
        return { content: [{ type: "text", text: String((args.a ?? 0) + (args.b ?? 0)) }] };
      case "explode":
        return { content: [{ type: "text", text: "the reactor is on fire" }], isError: true };
      case "crash":
        throw new Error("the MCP handler crashed");
      default:
        return { content: [{ type: "text", text: `unknown tool ${req.params.name}` }], isError: true };
    }
  });
  return server;
}

/** Starts the server; resolves with its URL and a stop function. */
export async function startMcpServer(): Promise<{ url: string; stop: () => Promise<void> }> {
  const http: HttpServer = createServer((req, res) => {
    void (async () => {
      const server = mcpServer();
      const transport = new StreamableHTTPServerTransport({} as ConstructorParameters<typeof StreamableHTTPServerTransport>[0]);
      res.on("close", () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stop: () =>
      new Promise<void>((r) => {
        http.closeAllConnections();
        http.close(() => r());
      }),
  };
}
