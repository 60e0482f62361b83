/**
 * The runner entrypoint refuses a bad spec file at start-up with a message
 * that says what is wrong, before it touches NATS.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";

t.test("a spec file naming an unknown builtin stops the runner with a clear error", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "interlace-spec-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const spec = join(dir, "tools.yaml");
  writeFileSync(
    spec,
    ["namespace: default", "pool: tools", "tools:", "  - name: search", "    description: s", "    parameters: {type: object}", "    implementation: {type: builtin, builtin: nope}", ""].join("\n"),
  );
  // Port 1 on loopback: nothing listens there, so reaching NATS would fail differently.
  const r = spawnSync(process.execPath, ["--import", "tsx", "toolrunner/src/main.ts", "--spec-file", spec, "--nats-url", "nats://127.0.0.1:1", "--port", "0", "--host", "127.0.0.1"], {
    encoding: "utf8",
    timeout: 60_000,
  });
  t.equal(r.status, 1);
  t.match(r.stdout + r.stderr, /tool \\"search\\": no builtin named \\"nope\\"/);
});
