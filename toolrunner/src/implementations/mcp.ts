/**
 * @module The `mcp` implementation: calls a tool on a Model Context Protocol
 * server over its Streamable HTTP transport with the official TypeScript SDK.
 * One client session per server URL, opened on first use and reopened after
 * a failure. Text content parts are joined; other parts are given as JSON;
 * `isError` results become failures.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolFailure, type ToolImpl } from "./tool-impl.js";

export interface McpImplOptions {
  url: string;
  /** The tool's name on the server. */
  tool: string;
  headers?: Record<string, string>;
}

/** Shared client sessions, by URL. */
export class McpClients {
  private readonly clients = new Map<string, Promise<Client>>();

  get(url: string, headers: Record<string, string> | undefined): Promise<Client> {
    let client = this.clients.get(url);
    if (client === undefined) {
      client = (async () => {
        const c = new Client({ name: "interlace-toolrunner", version: "0.1.0" });
        await c.connect(new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : {}));
        return c;
      })();
      this.clients.set(url, client);
      client.catch(() => this.clients.delete(url));
    }
    return client;
  }

  /** Forgets a broken session so the next call opens a new one. */
  reset(url: string): void {
    const client = this.clients.get(url);
    this.clients.delete(url);
    void client?.then((c) => c.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((c) => c.then((x) => x.close()).catch(() => undefined)));
  }
}

type ContentPart = { type: string; text?: string };

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return (content as ContentPart[]).map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : JSON.stringify(part))).join("\n");
}

export function createMcpImpl(options: McpImplOptions, clients: McpClients): ToolImpl {
  return {
    async run(args, ctx) {
      let client: Client;
      try {
        client = await clients.get(options.url, options.headers);
      } catch (err) {
        throw new ToolFailure(`cannot reach MCP server ${options.url}: ${(err as Error).message}`);
      }
      let result: Awaited<ReturnType<Client["callTool"]>>;
      try {
        result = await client.callTool({ name: options.tool, arguments: args }, undefined, { signal: ctx.signal, timeout: 24 * 3_600_000 });
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        clients.reset(options.url);
        throw new ToolFailure(`MCP call of "${options.tool}" on ${options.url} failed: ${(err as Error).message}`);
      }
      const text = contentText(result.content) || (result.structuredContent !== undefined ? JSON.stringify(result.structuredContent) : "");
      if (result.isError === true) throw new ToolFailure(text || `MCP tool "${options.tool}" reported an error`);
      return text;
    },
  };
}
