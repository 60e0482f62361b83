/**
 * @module The test control plane itself: RBAC is enforced (a ServiceAccount
 * without a binding is forbidden, with one it is allowed), ServiceAccount
 * tokens and kubeconfig files work, and with `garbageCollector` the real
 * kube-controller-manager garbage collector deletes the children of a
 * deleted custom resource.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import t from "tap";
import { API_VERSION } from "../../operator/src/api/index.js";
import { controlPlaneFor, installCrds, kubeRequest } from "../helpers/control-plane.js";
import { waitFor } from "../helpers/wait.js";

const BIN = process.env["INTERLACE_BIN"] ?? path.resolve(import.meta.dirname, "../../.cache/bin");

t.test("control plane with RBAC and a garbage collector", async (t) => {
  const gc = existsSync(path.join(BIN, "kube-controller-manager"));
  const cp = await controlPlaneFor(t, { garbageCollector: gc });
  const admin = cp.kubeConfig;
  await installCrds(admin);

  t.test("RBAC is enforced for ServiceAccounts", async (t) => {
    const sa = await cp.kubeConfigFor("team-a", "reader");
    const before = await kubeRequest(sa, "GET", "/api/v1/namespaces/team-a/configmaps");
    t.equal(before.status, 403, "no binding: forbidden");
    t.match((before.body as { message: string }).message, 'User "system:serviceaccount:team-a:reader" cannot list resource "configmaps"');
    const role = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "cm-reader", namespace: "team-a" }, rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }] };
    t.equal((await kubeRequest(admin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles", { body: role })).status, 201);
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "cm-reader", namespace: "team-a" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "cm-reader" },
      subjects: [{ kind: "ServiceAccount", name: "reader", namespace: "team-a" }],
    };
    t.equal((await kubeRequest(admin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings", { body: binding })).status, 201);
    await waitFor("the binding to take effect", async () => (await kubeRequest(sa, "GET", "/api/v1/namespaces/team-a/configmaps")).status === 200);
    t.equal((await kubeRequest(sa, "GET", "/api/v1/namespaces/default/configmaps")).status, 403, "only in its namespace");
    const file = await cp.kubeconfigPathFor("team-a", "reader");
    t.match(readFileSync(file, "utf8"), /user: system:serviceaccount:team-a:reader/, "kubeconfig file for child processes");
  });

  t.test("the garbage collector deletes a deleted owner's children", { skip: gc ? false : "kube-controller-manager not built" }, async (t) => {
    const owner = await kubeRequest(admin, "POST", "/apis/interlace.dev/v1alpha1/namespaces/default/enginepools", {
      body: { apiVersion: API_VERSION, kind: "EnginePool", metadata: { name: "gc-owner" }, spec: { runtime: { backend: "openai", upstreamURL: "http://up:8000" } } },
    });
    t.equal(owner.status, 201);
    const uid = (owner.body as { metadata: { uid: string } }).metadata.uid;
    const child = await kubeRequest(admin, "POST", "/api/v1/namespaces/default/configmaps", {
      body: {
        metadata: { name: "gc-child", ownerReferences: [{ apiVersion: API_VERSION, kind: "EnginePool", name: "gc-owner", uid, controller: true, blockOwnerDeletion: true }] },
        data: { a: "b" },
      },
    });
    t.equal(child.status, 201);
    t.equal((await kubeRequest(admin, "DELETE", "/apis/interlace.dev/v1alpha1/namespaces/default/enginepools/gc-owner")).status, 200);
    await waitFor("the child to be garbage-collected", async () => (await kubeRequest(admin, "GET", "/api/v1/namespaces/default/configmaps/gc-child")).status === 404);
    t.pass("child deleted by kube-controller-manager's garbage collector");
  });
});
