/**
 * @module What the client-library tests run against: a real nats-server, two
 * real engine processes on the generated `test` model and a router with API
 * keys (two principals), serving the `reports` AgentApp: one semantic
 * function of its own (`summarize`), the builtin `sleep` tool, user
 * interrupts on. Also the README's examples in one language, read from the
 * fenced blocks that follow a `<!-- tested: <lang> -->` line.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseApiKeys } from "../../common/src/security/http-auth.js";
import type { SemanticFunction } from "../../common/src/semantic-function.js";
import { appConfig, SLEEP_TOOL, startStack, type Stack } from "../router/fixtures.js";

export const ROOT = join(import.meta.dirname, "../..");
export const APP = "default/reports";
export const ALICE_KEY = "alice-key-0123456789abcdef";
export const BOB_KEY = "bob-key-0123456789abcdef";

const SUMMARIZE: SemanticFunction = {
  name: "summarize",
  template: "Summarize this part of the report in one sentence.\n\nPart:\n{{input:chunk}}\n\nSummary: {{output:summary}}",
  outputs: [{ name: "summary", maxTokens: 6, temperature: 0 }],
  tools: false,
};

interface Teardownable {
  teardown(fn: () => unknown): void;
}

export interface ClientStack {
  stack: Stack;
  /** The router's base URL (clients add `/v1/apps/...`). */
  url: string;
  /** Whether every engine is idle (no session running or queued, every sequence free) as the router sees it. */
  idle(): boolean;
}

export async function startClientStack(t: Teardownable): Promise<ClientStack> {
  const stack = await startStack(t, {
    engines: 2,
    routers: 1,
    engineArgs: ["--sequences", "6"],
    router: { maxVariableBytes: 16_384, security: { apiKeys: parseApiKeys(`alice:${ALICE_KEY},bob:${BOB_KEY}`), nats: {} } },
  });
  await stack.putApp(appConfig("reports", { tools: [SLEEP_TOOL], semanticFunctions: [SUMMARIZE], maxTokens: 256 }));
  const router = stack.routers[0]!;
  return {
    stack,
    url: stack.url(0),
    idle: () => router.engines.loads("default", "pool").every((e) => e.load === 0 && e.free === e.capacity),
  };
}

/** The README's code blocks marked `<!-- tested: <lang> -->`, in order. */
export function readmeExamples(lang: string): string[] {
  const text = readFileSync(join(ROOT, "README.md"), "utf8");
  const out: string[] = [];
  const marker = new RegExp(`<!-- tested: ${lang} -->\\s*\`\`\`[a-z]*\\n([\\s\\S]*?)\`\`\``, "g");
  for (const m of text.matchAll(marker)) out.push(m[1]!);
  return out;
}
