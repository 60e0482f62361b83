/**
 * @module Cluster access through `@kubernetes/client-node`'s `KubeConfig`:
 * `--kubeconfig FILE`, else the pod's service account (in-cluster), else the
 * library's default search (`$KUBECONFIG`, `~/.kube/config`). The library
 * handles everything a kubeconfig can say — certificates, tokens and token
 * files (re-read as projected tokens rotate), exec and auth-provider plugins.
 */
import { KubeConfig } from "@kubernetes/client-node";

/** The minimal record some callers hold instead of a kubeconfig: a server, its CA and a bearer token. */
export interface ClusterAccess {
  server: string;
  ca?: Buffer;
  token?: string;
}

/** `--kubeconfig FILE`, else in-cluster when `KUBERNETES_SERVICE_HOST` is set, else `$KUBECONFIG` / `~/.kube/config`. */
export function loadKubeConfig(file?: string, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else if (env["KUBERNETES_SERVICE_HOST"]) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

/** A `KubeConfig` for a {@link ClusterAccess} record (the test control plane hands these out). */
export function kubeConfigFromAccess(access: ClusterAccess): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: "cluster", server: access.server, skipTLSVerify: false, ...(access.ca ? { caData: access.ca.toString("base64") } : {}) },
    { name: "user", ...(access.token !== undefined ? { token: access.token } : {}) },
  );
  return kc;
}

/** Accepts either form. */
export function toKubeConfig(access: KubeConfig | ClusterAccess): KubeConfig {
  return access instanceof KubeConfig ? access : kubeConfigFromAccess(access);
}
