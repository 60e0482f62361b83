/**
 * @module What one custom kind declares about itself (names, schema, printer
 * columns) and the common object envelope. `crd.ts` turns a KindDefinition
 * into a CustomResourceDefinition; the runtime uses the same record as its
 * REST coordinates (it is structurally a runtime `ResourceType`).
 */
import type { V1ObjectMeta } from "@kubernetes/client-node";
import type { CelRule, OpenApiSchema } from "./schema.js";

/** The API group of every Interlace kind. */
export const GROUP = "interlace.dev";
/** The only served version. */
export const VERSION = "v1alpha1";
/** `apiVersion` of every Interlace object. */
export const API_VERSION = `${GROUP}/${VERSION}` as const;
/** `kubectl get interlace` lists every kind in this category. */
export const CATEGORY = "interlace";

/** A `kubectl get` column. */
export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  /** 0 shows in the default output, 1 only with `-o wide`. */
  priority?: number;
}

/** Everything a CRD needs to know about one kind. */
export interface KindDefinition {
  group: typeof GROUP;
  version: typeof VERSION;
  kind: string;
  plural: string;
  singular: string;
  namespaced: true;
  shortNames: string[];
  description: string;
  spec: OpenApiSchema;
  status: OpenApiSchema;
  printerColumns: PrinterColumn[];
  /** The scale subresource (`kubectl scale`, HorizontalPodAutoscaler), for kinds with replicas. */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  /** CEL rules on the whole object (they can see `metadata.name`). */
  objectRules?: CelRule[];
}

/** An Interlace object as read from the API server. */
export interface InterlaceObject<K extends string, Spec, Status> {
  apiVersion: typeof API_VERSION;
  kind: K;
  metadata: V1ObjectMeta;
  spec: Spec;
  status?: Status;
}

/** The Ready condition's status, as a printer column. */
export const READY_COLUMN: PrinterColumn = {
  name: "Ready",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  description: "Whether the resource is ready to serve.",
};

/** Why it is (not) ready, shown with `-o wide`. */
export const REASON_COLUMN: PrinterColumn = {
  name: "Reason",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  priority: 1,
};

/** The object's age. */
export const AGE_COLUMN: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
