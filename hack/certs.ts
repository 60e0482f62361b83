/**
 * @module Test certificates made with the machine's openssl (P-256): a CA and
 * serving and client certificates signed by it. Used by the test control plane (the
 * kube-apiserver) and by the NATS harness (TLS between clients and servers).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const execFileP = promisify(execFile);
const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/** Runs openssl in `cwd`. */
export async function openssl(cwd: string, args: string[]): Promise<void> {
  await execFileP("openssl", args, { cwd });
}

/** `ca.key` + `ca.crt` in `dir`, valid two days. */
export async function generateCa(dir: string, commonName = "interlace-test-ca"): Promise<void> {
  await openssl(dir, ["req", "-x509", ...EC, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", `/CN=${commonName}`]);
}

/**
 * `<name>.key` + `<name>.crt` in `dir`, signed by the CA there, for the given
 * subject alternative names (e.g. `IP:127.0.0.1`, `DNS:localhost`).
 */
export async function generateServerCert(dir: string, name: string, sans: string[]): Promise<void> {
  await openssl(dir, ["req", "-new", ...EC, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`, "-addext", `subjectAltName=${sans.join(",")}`]);
  await openssl(dir, ["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.crt`, "-days", "2", "-copy_extensions", "copy"]);
}

/**
 * `<name>.key` + `<name>.crt` in `dir`: a client certificate signed by the CA
 * there, for user `commonName` in group `organization` (how kube-apiserver
 * authenticates to kubelets).
 */
export async function generateClientCert(dir: string, name: string, commonName: string, organization: string): Promise<void> {
  await openssl(dir, ["req", "-new", ...EC, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/O=${organization}/CN=${commonName}`, "-addext", "extendedKeyUsage=clientAuth"]);
  await openssl(dir, ["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.crt`, "-days", "2", "-copy_extensions", "copy"]);
}
