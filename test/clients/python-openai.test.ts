/**
 * The official Python `openai` package (`hack/tools/75-python-openai.sh`, a
 * venv under .cache) against the engine's `/v1/chat/completions` on the
 * generated `test` model: a function-tool loop, streaming with tool-call
 * deltas and the usage chunk, a named `tool_choice`, structured outputs
 * parsed into nested pydantic models, and an error raised as `BadRequestError`
 * (`test/clients/python/openai_tool_loop.py`).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { startTestPod } from "../server/helpers.js";

const ROOT = join(import.meta.dirname, "../..");
const cache = process.env["INTERLACE_CACHE"] ?? join(ROOT, ".cache");
const python = join(cache, "venv/openai-python/bin/python");
if (!existsSync(python)) {
  const r = spawnSync("bash", [join(ROOT, "hack/tools/75-python-openai.sh")], { stdio: "inherit" });
  if (r.status !== 0) throw new Error(`hack/tools/75-python-openai.sh failed (exit ${r.status})`);
}

t.test("Python openai client: tool loop, streaming, errors", async (t) => {
  const { base } = await startTestPod(t);
  const { spawn } = await import("node:child_process");
  const child = spawn(python, [join(import.meta.dirname, "python/openai_tool_loop.py"), `${base}/v1`], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  t.equal(code, 0, "the Python client ran to the end");
  const summary = JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, unknown>;
  t.match(summary, {
    ran: ["get_time", "get_weather"],
    final: /sunny at noon/,
    final_finish: "stop",
    stream_calls: [
      ["call_w", "get_weather", { city: "Paris" }],
      ["call_t", "get_time", { city: "Paris" }],
    ],
    stream_finish: "tool_calls",
    error: { status: 400, message: /messages/ },
    forced: ["tool_calls", ["get_time"]],
  });
  const [kind, forecast] = summary["parsed"] as [string, { city: string; days: { day: string; high: number }[] }];
  t.equal(kind, "Forecast", "the client parsed the answer into its pydantic model");
  t.ok(forecast.city.length <= 10 && forecast.days.length <= 3 && forecast.days.every((d) => ["mon", "tue"].includes(d.day) && Number.isInteger(d.high)), JSON.stringify(forecast));
  t.ok(typeof summary["stream_usage"] === "number" && summary["stream_usage"] > 0, "usage in the last chunk");
});
