/**
 * @module Makes a trust-root Secret for the chart's `nats.auth.secretName`
 * (the layout the operator makes by itself at first start when none is
 * given, operator/src/credentials/trust-root.ts): a fresh trust root
 * (operator + `INTERLACE` account + `SYS`), the server's `auth.conf` (JWTs
 * only), the account seed the operator mints every component's credentials
 * with, the master interrupt and owner-tag keys and the router's key towards engines. Prints a
 * Secret manifest on stdout:
 *
 *   npx tsx hack/nats-keys.ts --namespace interlace-system --name interlace-nats-auth | kubectl apply -f -
 *
 * Rotating: run again and apply (new trust root), then restart the operator
 * (it re-mints every Secret), see README "Security".
 */
import { createTrustRoot } from "../common/src/security/nats-credentials.js";
import { b64, trustRootSecretData } from "../operator/src/credentials/trust-root.js";

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};
const data = trustRootSecretData(await createTrustRoot());
const manifest = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: arg("name", "interlace-nats-auth"), namespace: arg("namespace", "interlace-system"), labels: { "app.kubernetes.io/part-of": "interlace", "app.kubernetes.io/component": "trust-root" } },
  type: "Opaque",
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
};
process.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
