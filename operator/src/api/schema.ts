/**
 * @module The OpenAPI v3 schema vocabulary a CustomResourceDefinition accepts
 * (the structural-schema subset plus the `x-kubernetes-*` extensions), as
 * plain JSON-shaped objects so the CRD YAML is a direct dump of them, and
 * small builders for the shapes every kind repeats (quantities, references,
 * conditions). Validation is written next to the fields it guards.
 */

/** One CEL rule (`x-kubernetes-validations`): `rule` must hold for `self`. */
export interface CelRule {
  rule: string;
  message: string;
  /** Where the error is reported, relative to the node, e.g. `.upstreamURL`. */
  fieldPath?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
}

/** A structural OpenAPI v3 schema node as the API server reads it. */
export interface OpenApiSchema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  format?: string;
  properties?: Record<string, OpenApiSchema>;
  required?: string[];
  items?: OpenApiSchema;
  additionalProperties?: OpenApiSchema | boolean;
  enum?: (string | number | boolean)[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  nullable?: boolean;
  anyOf?: OpenApiSchema[];
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: "atomic" | "granular";
  "x-kubernetes-validations"?: CelRule[];
}

/** An object node; `required` lists the fields that must be present. */
export function object(
  description: string,
  properties: Record<string, OpenApiSchema>,
  extra: Omit<OpenApiSchema, "type" | "description" | "properties"> = {},
): OpenApiSchema {
  return { type: "object", description, properties, ...extra };
}

/** An integer within [min, max]. */
export function int(description: string, min: number, max: number, extra: Omit<OpenApiSchema, "type"> = {}): OpenApiSchema {
  return { type: "integer", description, format: "int32", minimum: min, maximum: max, ...extra };
}

/** A string node. */
export function str(description: string, extra: Omit<OpenApiSchema, "type" | "description"> = {}): OpenApiSchema {
  return { type: "string", description, ...extra };
}

/** A string restricted to the given values. */
export function oneOf<T extends string>(description: string, values: readonly T[], defaultValue?: T): OpenApiSchema {
  return { type: "string", description, enum: [...values], ...(defaultValue === undefined ? {} : { default: defaultValue }) };
}

/** A boolean with a default. */
export function bool(description: string, defaultValue: boolean): OpenApiSchema {
  return { type: "boolean", description, default: defaultValue };
}

/** An RFC 1123 DNS label: a Kubernetes object name usable as a Service name. */
export const DNS_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/** A DNS-1123 subdomain (Secret and ConfigMap names). */
export const DNS_SUBDOMAIN_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/** `http://` or `https://` followed by a host. */
export const HTTP_URL_PATTERN = "^https?://[^\\s/?#]+([/?#][^\\s]*)?$";

/** The Kubernetes resource.Quantity grammar (as `kubectl explain` shows it). */
export const QUANTITY_PATTERN =
  "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

/** A resource quantity (`4Gi`, `500m`, `2`), accepted as an integer or a string. */
export function quantity(description: string): OpenApiSchema {
  return {
    description,
    anyOf: [{ type: "integer" }, { type: "string" }],
    pattern: QUANTITY_PATTERN,
    "x-kubernetes-int-or-string": true,
  };
}

/** A reference to another object of a known kind in the same namespace. */
export function localRef(description: string): OpenApiSchema {
  return object(
    description,
    { name: str("Name of the referenced object (same namespace).", { minLength: 1, maxLength: 63, pattern: DNS_LABEL_PATTERN }) },
    { required: ["name"] },
  );
}

/** A `http(s)://` URL. */
export function httpUrl(description: string): OpenApiSchema {
  return str(description, { format: "uri", maxLength: 2048, pattern: HTTP_URL_PATTERN });
}

/** The standard `metav1.Condition` list (`status.conditions`), keyed by type. */
export function conditionsSchema(): OpenApiSchema {
  return {
    type: "array",
    description: "Latest observations of the object's state: Ready, Progressing, Degraded.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    maxItems: 16,
    items: object(
      "One condition (metav1.Condition).",
      {
        type: str("Condition type: Ready, Progressing or Degraded.", { maxLength: 316, pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$" }),
        status: oneOf("True, False or Unknown.", ["True", "False", "Unknown"]),
        observedGeneration: { type: "integer", format: "int64", minimum: 0, description: "The .metadata.generation the condition was set for." },
        lastTransitionTime: str("When the status last changed.", { format: "date-time" }),
        reason: str("CamelCase reason for the last transition.", { minLength: 1, maxLength: 1024, pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$" }),
        message: str("Human-readable detail.", { maxLength: 32768 }),
      },
      { required: ["type", "status", "lastTransitionTime", "reason", "message"] },
    ),
  };
}

/** `status.observedGeneration`. */
export function observedGenerationSchema(): OpenApiSchema {
  return { type: "integer", format: "int64", minimum: 0, description: "The .metadata.generation the status reflects." };
}
