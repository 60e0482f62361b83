/**
 * @module The operator's API calls, made with `@kubernetes/client-node`:
 * `KubernetesObjectApi` for get/list/create/replace/delete, merge patch and
 * server-side apply of any kind, and `CustomObjectsApi` for the status
 * subresource of the operator's own kinds (the generic object API has no
 * subresources). Two things this module takes care of so callers need not:
 *
 * - Content types. The generated 1.x APIs pick the first media type they list
 *   for PATCH (`application/json-patch+json`), which the API server rejects
 *   for a merge patch or an apply body; `setHeaderOptions` overrides it per
 *   call (kubernetes-client/javascript#1398 and its follow-ups). The object
 *   API takes the strategy as a parameter.
 * - Errors. The library throws `ApiException` (HTTP code, raw body); calls
 *   here rethrow {@link KubeApiError} with the Status `reason`, so callers
 *   branch on NotFound / Conflict / Gone as before.
 *
 * Objects the library returns for built-in kinds are its model classes
 * (timestamps as `Date`); the operator's own kinds come back as plain JSON
 * apart from `metadata`.
 */
import {
  ApiException,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { KubeApiError } from "./errors.js";
import { apiVersionOf, type ResourceType } from "./resource-type.js";

/** A list answer: the items (with apiVersion/kind filled in) and the list's resourceVersion to watch from. */
export interface ObjectList<T> {
  items: T[];
  resourceVersion: string;
}

export interface ApplyOptions {
  fieldManager: string;
  /** Take over fields owned by other managers (a hand edit); controllers apply with force. */
  force?: boolean;
  /** Only `status`, and only for custom resources. */
  subresource?: "status";
}

/** Typed calls against the API server named by a `KubeConfig`. */
export class KubeClient {
  private readonly objects: KubernetesObjectApi;
  private readonly custom: CustomObjectsApi;

  constructor(readonly kubeConfig: KubeConfig) {
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
  }

  /** Reads one object; null when it does not exist. */
  async get<T extends KubernetesObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T | null> {
    try {
      return await this.objects.read<T>({ apiVersion: apiVersionOf(type), kind: type.kind, metadata: { name, ...(namespace !== undefined ? { namespace } : {}) } });
    } catch (err) {
      const e = toApiError(err, "GET", type.kind, name);
      if (e.status === 404) return null;
      throw e;
    }
  }

  /** Lists objects (all namespaces when `namespace` is undefined). */
  async list<T extends KubernetesObject>(type: ResourceType, namespace?: string, opts: { labelSelector?: string } = {}): Promise<ObjectList<T>> {
    const list = await call("LIST", type.kind, "", () =>
      this.objects.list<T>(apiVersionOf(type), type.kind, namespace, undefined, undefined, undefined, undefined, opts.labelSelector),
    );
    return { items: list.items.map((item) => withTypeMeta(item, type)), resourceVersion: list.metadata?.resourceVersion ?? "" };
  }

  create<T extends KubernetesObject>(type: ResourceType, obj: T, opts: { fieldManager?: string } = {}): Promise<T> {
    return call("POST", type.kind, obj.metadata?.name ?? "", () => this.objects.create(obj, undefined, undefined, opts.fieldManager));
  }

  /** PUT with the object's resourceVersion: optimistic concurrency (409 on a lost race). */
  replace<T extends KubernetesObject>(type: ResourceType, obj: T, opts: { fieldManager?: string } = {}): Promise<T> {
    return call("PUT", type.kind, obj.metadata?.name ?? "", () => this.objects.replace(obj, undefined, undefined, opts.fieldManager));
  }

  /**
   * Server-side apply: the body is the full intent of `fieldManager`; fields it
   * applied before and omits now are removed, fields others own are kept.
   */
  apply<T extends KubernetesObject>(type: ResourceType, obj: T, opts: ApplyOptions): Promise<T> {
    const name = obj.metadata?.name ?? "";
    if (opts.subresource === "status") {
      return call("APPLY", type.kind, name, () =>
        this.custom.patchNamespacedCustomObjectStatus(
          { ...customCoordinates(type, obj.metadata?.namespace, name), body: obj, fieldManager: opts.fieldManager, ...(opts.force !== undefined ? { force: opts.force } : {}) },
          setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply),
        ) as Promise<T>,
      );
    }
    return call("APPLY", type.kind, name, () => this.objects.patch(obj, undefined, undefined, opts.fieldManager, opts.force, PatchStrategy.ServerSideApply));
  }

  /** JSON merge patch (RFC 7386), optionally on the `status` subresource of a custom resource. */
  mergePatch<T extends KubernetesObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: Record<string, unknown>,
    opts: { subresource?: "status"; fieldManager?: string } = {},
  ): Promise<T> {
    if (opts.subresource === "status") {
      return call("PATCH", type.kind, name, () =>
        this.custom.patchNamespacedCustomObjectStatus(
          { ...customCoordinates(type, namespace, name), body: patch, ...(opts.fieldManager !== undefined ? { fieldManager: opts.fieldManager } : {}) },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        ) as Promise<T>,
      );
    }
    // The object API finds the path from apiVersion/kind/metadata: the patch carries them.
    const meta = (patch["metadata"] ?? {}) as Record<string, unknown>;
    const body = { ...patch, apiVersion: apiVersionOf(type), kind: type.kind, metadata: { ...meta, name, ...(namespace !== undefined ? { namespace } : {}) } };
    return call("PATCH", type.kind, name, () => this.objects.patch(body as T, undefined, undefined, opts.fieldManager, undefined, PatchStrategy.MergePatch));
  }

  /** Deletes one object; false when it was already gone. */
  async delete(type: ResourceType, namespace: string | undefined, name: string, opts: { propagationPolicy?: string } = {}): Promise<boolean> {
    const header = { apiVersion: apiVersionOf(type), kind: type.kind, metadata: { name, ...(namespace !== undefined ? { namespace } : {}) } };
    try {
      await this.objects.delete(header, undefined, undefined, undefined, undefined, opts.propagationPolicy);
      return true;
    } catch (err) {
      const e = toApiError(err, "DELETE", type.kind, name);
      if (e.status === 404) return false;
      throw e;
    }
  }
}

/** The CustomObjectsApi coordinates of one object of a namespaced custom kind. */
function customCoordinates(type: ResourceType, namespace: string | undefined, name: string) {
  if (type.group === "" || !type.namespaced || namespace === undefined) {
    throw new Error(`status subresource writes are supported for namespaced custom resources only (${type.kind})`);
  }
  return { group: type.group, version: type.version, plural: type.plural, namespace, name };
}

async function call<T>(verb: string, kind: string, name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toApiError(err, verb, kind, name);
  }
}

/** Lists drop apiVersion/kind from items; put them back so objects are self-describing. */
function withTypeMeta<T extends KubernetesObject>(obj: T, type: ResourceType): T {
  if (obj.kind !== undefined && obj.apiVersion !== undefined) return obj;
  return Object.assign(obj, { apiVersion: apiVersionOf(type), kind: type.kind });
}

/** `ApiException` (code + raw body, a Status object as text or parsed) → {@link KubeApiError}; anything else passes through wrapped. */
export function toApiError(err: unknown, verb: string, kind: string, name: string): KubeApiError {
  if (err instanceof KubeApiError) return err;
  if (!(err instanceof ApiException)) {
    return new KubeApiError(0, "", `${verb} ${kind}${name ? ` ${name}` : ""}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const status = (err as ApiException<unknown>).code;
  const raw = (err as ApiException<unknown>).body;
  let body: { reason?: string; message?: string } = {};
  if (typeof raw === "string") {
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      body = { message: raw.slice(0, 500) };
    }
  } else if (raw && typeof raw === "object") body = raw as typeof body;
  const reason = body.reason ?? "";
  return new KubeApiError(status, reason, `${verb} ${kind}${name ? ` ${name}` : ""}: ${status} ${reason}: ${body.message ?? ""}`, { cause: err });
}
