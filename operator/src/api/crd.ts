/**
 * @module Builds a CustomResourceDefinition (apiextensions.k8s.io/v1) from a
 * KindDefinition: structural schema, status subresource, printer columns,
 * short names and the `interlace` category. Pure: the generator dumps the
 * result to YAML and tests compare it with the committed files.
 */
import { CATEGORY, type KindDefinition, type PrinterColumn } from "./kind.js";
import type { OpenApiSchema } from "./schema.js";

/** The CRD object, JSON-shaped (what `kubectl apply` and server-side apply take). */
export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    scope: "Namespaced";
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames: string[]; categories: string[] };
    versions: {
      name: string;
      served: true;
      storage: true;
      schema: { openAPIV3Schema: OpenApiSchema };
      subresources: {
        status: Record<string, never>;
        scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
      };
      additionalPrinterColumns: PrinterColumn[];
    }[];
  };
}

/** The CRD for one kind. */
export function buildCrd(def: KindDefinition): CustomResourceDefinition {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${def.plural}.${def.group}`,
      labels: { "app.kubernetes.io/part-of": "interlace" },
    },
    spec: {
      group: def.group,
      scope: "Namespaced",
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: [...def.shortNames],
        categories: [CATEGORY],
      },
      versions: [
        {
          name: def.version,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: def.description,
              properties: {
                apiVersion: { type: "string", description: "APIVersion of this object." },
                kind: { type: "string", description: "Kind of this object." },
                metadata: { type: "object" },
                spec: def.spec,
                status: def.status,
              },
              required: ["spec"],
              ...(def.objectRules !== undefined ? { "x-kubernetes-validations": def.objectRules.map((r) => ({ ...r })) } : {}),
            },
          },
          subresources: { status: {}, ...(def.scale !== undefined ? { scale: { ...def.scale } } : {}) },
          additionalPrinterColumns: def.printerColumns.map((c) => ({ ...c })),
        },
      ],
    },
  };
}
