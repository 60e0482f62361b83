/**
 * @module `npm run test:e2e` as a test: the chart's CRDs and RBAC, the
 * samples and the real operator on a real control plane end with every
 * Interlace resource Ready, and the `kubectl get interlace` view shows it;
 * a session opened through one of two router replicas is read to its end
 * through the other.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

t.test("npm run test:e2e brings the samples to Ready", async (t) => {
  const { code, out } = await new Promise<{ code: number; out: string }>((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, "node_modules/tsx/dist/cli.mjs"), path.join(ROOT, "hack/e2e.ts")],
      { cwd: ROOT, env: { ...process.env, E2E_KUBECTL: "none", E2E_READY_TIMEOUT_MS: "120000" }, maxBuffer: 16 << 20, timeout: 280_000 },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : 1, out: stdout + stderr }),
    );
  });
  t.equal(code, 0, "exits 0", { output: out.slice(-4000) });
  t.match(out, /installed the chart's CRDs: (inferencepools\.inference\.networking\.k8s\.io, )?agentapps\.interlace\.dev, enginepools\.interlace\.dev, toolpools\.interlace\.dev/);
  t.match(out, /applied samples\/: (AgentApp\/assistant-cml, )?AgentApp\/reports, AgentApp\/assistant, .*EnginePool\/qwen-small, ToolPool\/basic-tools/);
  t.match(out, /Deployments marked available through their status subresource: [1-9]/);
  for (const name of ["qwen-small", "gemma-cml", "basic-tools", "assistant", "assistant-cml"]) t.match(out, new RegExp(`^${name}\\s+True\\s`, "m"), `${name} shows Ready True`);
  t.match(out, /all Interlace resources Ready/);
  t.match(out, /running router replica 1 as the chart's router Deployment does/, "two router replicas, as the chart runs");
  t.match(
    out,
    /opened at http:\/\/interlace-router\.interlace-system\.svc:8080\/v1\/apps\/default\/assistant \(through router replica 0, its events read through replica 1\) ran on engine \S+ .* finished: done eos/,
    "a session opened through one replica reached the engine and finished, read through the other",
  );
});
