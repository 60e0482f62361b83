/**
 * @module Rotates a master key of the trust-root Secret
 * (operator/src/credentials/trust-root.ts `rotateTrustKey`) with a grace
 * window: a fresh key becomes current and the old one is kept beside it,
 * accepted until now + `--grace-ms` (default 10 min), so interrupts signed
 * and owner tags issued before the rotation keep working while the new key
 * reaches every pod. The engine API key (the router's and the pickers'
 * bearer key towards engines) works the same way: engines accept both for
 * the window and the front doors present the old one until it ends, so no
 * request is refused while the Secrets propagate. `--grace-ms 0` (or
 * `--revoke`) refuses the old key at once (a leaked key).
 *
 *   npx tsx hack/rotate-key.ts --key interrupt|owner-tag|engine-api --namespace interlace-system --name interlace-nats-auth [--grace-ms 600000 | --revoke]
 *
 * The running operator reads the trust root again every 5 s
 * (`--trust-root-reload-ms`) and re-mints every EnginePool's, endpoint
 * picker's and the router's Secret with the new ring (no restart); the
 * kubelet updates their mounted files and the running pods read the new ring
 * in place (no roll, no dropped session). When the window ends the operator
 * renders the Secrets again without the previous key. Uses the current
 * kubeconfig.
 */
import { createLogger } from "../common/src/index.js";
import { DEFAULT_KEY_GRACE_MS } from "../common/src/security/key-ring.js";
import { rotateTrustKey, type RotatableKey } from "../operator/src/credentials/trust-root.js";
import { KubeClient, loadKubeConfig } from "../operator/src/runtime/index.js";

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};
const key = arg("key", "interrupt");
if (key !== "interrupt" && key !== "owner-tag" && key !== "engine-api") throw new Error(`--key must be "interrupt", "owner-tag" or "engine-api", got "${key}"`);
const graceMs = process.argv.includes("--revoke") ? 0 : Number(arg("grace-ms", String(DEFAULT_KEY_GRACE_MS)));
if (!Number.isInteger(graceMs) || graceMs < 0) throw new Error(`--grace-ms must be a whole number of milliseconds >= 0`);
await rotateTrustKey(new KubeClient(loadKubeConfig()), arg("namespace", "interlace-system"), arg("name", "interlace-nats-auth"), createLogger("rotate-key", "info"), {
  key: key as RotatableKey,
  graceMs,
});
