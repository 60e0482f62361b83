/**
 * @module Rotates the master interrupt key in the trust-root Secret
 * (operator/src/credentials/trust-root.ts `rotateInterruptKey`): the current
 * key becomes `interrupt.key.previous` and a fresh one current, so every
 * namespace's engines accept both while their pods roll (no live session
 * loses an interrupt). `--revoke` drops the old key at once (a leaked key).
 *
 *   npx tsx hack/rotate-interrupt-key.ts --namespace interlace-system --name interlace-nats-auth [--revoke]
 *   kubectl -n interlace-system rollout restart deployment/interlace-operator
 *
 * The operator reads the trust root at start: its restart re-mints every
 * EnginePool's Secret, and their pods roll. Uses the current kubeconfig.
 */
import { createLogger } from "../common/src/index.js";
import { rotateInterruptKey } from "../operator/src/credentials/trust-root.js";
import { KubeClient, loadKubeConfig } from "../operator/src/runtime/index.js";

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};
await rotateInterruptKey(new KubeClient(loadKubeConfig()), arg("namespace", "interlace-system"), arg("name", "interlace-nats-auth"), createLogger("rotate-interrupt-key", "info"), {
  revoke: process.argv.includes("--revoke"),
});
