/**
 * @module `tsx hack/cluster-up.ts [--ready-file FILE]`: the process behind
 * `bash hack/cluster.sh up`. Starts the single-node cluster
 * (hack/cluster.ts), installs Interlace with `helm install` and the local
 * images, applies the samples with an in-cluster model, waits until every
 * pod is Ready, writes FILE (kubeconfig, folder, how to open a session) and
 * keeps the cluster running until SIGTERM/SIGINT (`hack/cluster.sh down`).
 */
import { writeFile } from "node:fs/promises";
import { parseArgv } from "../common/src/index.js";
import { startCluster } from "./cluster.js";
import { APP_NS, RELEASE_NS, applySamples, helmInstall, routerApiKey, routerUrl, waitReady } from "./cluster-interlace.js";

function say(msg: string): void {
  process.stdout.write(`[cluster] ${msg}\n`);
}

async function main(): Promise<void> {
  const flags = parseArgv(process.argv.slice(2));
  const readyFile = flags.get("ready-file");
  const started = Date.now();
  const cluster = await startCluster({ log: say });
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    say("stopping");
    void cluster.stop().then(() => process.exit(0));
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  try {
    say("helm install interlace charts/interlace");
    await helmInstall(cluster);
    await waitReady(cluster, [RELEASE_NS], 600_000);
    const { applied, modelUrl } = await applySamples(cluster);
    say(`applied ${applied.join(", ")} (model from ${modelUrl})`);
    await waitReady(cluster, [APP_NS, RELEASE_NS], 600_000, { interlace: true });
  } catch (err) {
    say(`failed: ${err instanceof Error ? err.message : String(err)}`);
    await cluster.stop();
    process.exit(1);
  }
  const router = await routerUrl(cluster);
  const key = await routerApiKey(cluster);
  const bearer = key === undefined ? "" : ` -H 'authorization: Bearer ${key}'`;
  const kubeconfig = cluster.cp.kubeconfigPath;
  const instructions = [
    `Interlace is running on a single-node cluster (up in ${((Date.now() - started) / 1000).toFixed(0)}s).`,
    "",
    `  export KUBECONFIG=${process.env["INTERLACE_CACHE"] ?? ".cache"}/cluster/user/kubeconfig`,
    `  ${process.env["INTERLACE_BIN"] ?? ".cache/bin"}/kubectl get interlace,pods -A`,
    "",
    `The AgentApp default/assistant's endpoint, through the router Service (${router}):`,
    "",
    `  curl -s -X POST ${router}/v1/apps/${APP_NS}/assistant/sessions -H 'content-type: application/json'${bearer} \\`,
    `    -d '{"prompt":"hi","policy":{"type":"lpt-dag","calls":[{"id":"c1","tool":"echo","arguments":{"text":"hello"}}],"finalText":" done"}}'`,
    `  curl -sN${bearer} ${router}<eventsUrl from the answer>`,
    "",
    "(The model is a generated test model: a scripted policy shows the tool path; prompts without one produce its text.)",
    "Stop and remove it all: bash hack/cluster.sh down",
  ].join("\n");
  if (readyFile !== undefined) await writeFile(readyFile, JSON.stringify({ kubeconfig, dir: cluster.dir, router, instructions }));
  say("ready");
  // Keep running: the cluster's processes stop with this one.
  setInterval(() => undefined, 1 << 30);
}

await main();
