/**
 * @module Makes the NATS auth Secret the chart's `nats.auth.secretName`
 * names: a fresh trust root (operator + `INTERLACE` account + `SYS`), the
 * server's `auth.conf` (JWTs only), the account seed that mints component
 * credentials, and credentials for the operator and the router. Prints a
 * Secret manifest on stdout:
 *
 *   npx tsx hack/nats-keys.ts --namespace interlace-system --name interlace-nats-auth | kubectl apply -f -
 *
 * Rotating: run again and apply (new trust root; every component needs new
 * credentials), see README "Security".
 */
import { createTrustRoot, mintUserCreds, serverAuthConfig } from "../common/src/security/nats-credentials.js";

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};
const root = await createTrustRoot();
const data: Record<string, string> = {
  "auth.conf": `${serverAuthConfig(root)}\n`,
  "account.seed": root.accountSeed,
  "operator.creds": await mintUserCreds(root.accountSeed, { kind: "operator" }),
  "router.creds": await mintUserCreds(root.accountSeed, { kind: "router" }),
};
const manifest = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: arg("name", "interlace-nats-auth"), namespace: arg("namespace", "interlace-system"), labels: { "app.kubernetes.io/name": "interlace" } },
  type: "Opaque",
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
};
process.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
