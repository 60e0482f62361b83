/**
 * @module Test helper: a real etcd + kube-apiserver per test file (see
 * hack/control-plane.ts), stopped by tap's teardown.
 */
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from "../../hack/control-plane.js";

export {
  startControlPlane,
  freePort,
  renderKubeconfig,
  kubeRequest,
  installCrds,
  waitCrdServing,
  applyManifest,
  discover,
  pathOf,
  type Manifest,
  type ControlPlane,
  type KubeAccess,
  type ControlPlaneOptions,
  type KubeRequestOptions,
  type KubeResponse,
} from "../../hack/control-plane.js";

/** The part of a tap `Test` this helper uses. */
interface Teardownable {
  teardown(fn: () => unknown): void;
}

/** Starts a control plane and registers its stop with the test's teardown. */
export async function controlPlaneFor(t: Teardownable, opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const cp = await startControlPlane(opts);
  t.teardown(() => cp.stop());
  return cp;
}
