/**
 * @module The egress a pool's pods may open besides NATS and DNS, as the
 * operator renders it into the pool's NetworkPolicy
 * (resources/network-policy.ts): CIDR blocks, or pods in the cluster (a
 * namespace, pod labels or both), each with optional ports. Used by
 * ToolPools (an http or mcp tool's server) and EnginePools (an `openai`
 * backend's upstream, a model server). Validated by the API server: a block
 * must be a CIDR (CEL `isCIDR`), a rule names a block or pods but not both,
 * ports 1-65535.
 */
import { DNS_LABEL_PATTERN, int, object, oneOf, str, type OpenApiSchema } from "./schema.js";

export const EGRESS_PROTOCOLS = ["TCP", "UDP", "SCTP"] as const;
export type EgressProtocol = (typeof EGRESS_PROTOCOLS)[number];

export interface EgressPort {
  port: number;
  /** A range `port`..`endPort`. */
  endPort?: number;
  /** Default TCP. */
  protocol?: EgressProtocol;
}

/** One destination the pool's pods may reach: a block (`cidr`) or pods (`namespace` and/or `podLabels`). */
export interface EgressRule {
  /** An IPv4 or IPv6 block, e.g. 203.0.113.0/24. */
  cidr?: string;
  /** Blocks inside `cidr` that stay closed. */
  except?: string[];
  /** Pods of this namespace (absent with `podLabels`: the pool's own namespace). */
  namespace?: string;
  /** Pods with these labels (absent with `namespace`: every pod there). */
  podLabels?: Record<string, string>;
  /** The ports; absent: every port of the block. */
  ports?: EgressPort[];
}

const cidr = (description: string): OpenApiSchema =>
  str(description, { minLength: 3, maxLength: 64, "x-kubernetes-validations": [{ rule: "isCIDR(self)", message: "must be a CIDR block, e.g. 203.0.113.0/24 or 2001:db8::/32" }] });

/** The `spec.egress` list of a pool kind. */
export function egressSchema(what: string): OpenApiSchema {
  return {
    type: "array",
    description: `Destinations ${what} may reach besides NATS and DNS, when the operator renders per-pool NetworkPolicies (--network-policy-release). Absent or empty: none.`,
    maxItems: 64,
    items: object(
      "A destination, a CIDR block or pods in the cluster, and optionally its ports.",
      {
        cidr: cidr("The destination block."),
        except: { type: "array", description: "Blocks inside cidr that stay closed.", maxItems: 32, items: cidr("A block inside cidr.") },
        namespace: str("Pods of this namespace (absent with podLabels: the pool's own).", { minLength: 1, maxLength: 63, pattern: DNS_LABEL_PATTERN }),
        podLabels: { type: "object", description: "Pods with these labels (absent with namespace: every pod there).", additionalProperties: { type: "string", maxLength: 63 }, maxProperties: 16 },
        ports: {
          type: "array",
          description: "Ports of the block (absent: all).",
          maxItems: 32,
          items: object(
            "A port or a range.",
            {
              port: int("Port.", 1, 65535),
              endPort: int("Last port of a range starting at port.", 1, 65535),
              protocol: oneOf("Protocol.", EGRESS_PROTOCOLS, "TCP"),
            },
            { required: ["port"], "x-kubernetes-validations": [{ rule: "!has(self.endPort) || self.endPort >= self.port", message: "endPort must not be below port", fieldPath: ".endPort" }] },
          ),
        },
      },
      {
        "x-kubernetes-validations": [
          { rule: "has(self.cidr) != (has(self.namespace) || has(self.podLabels))", message: "an egress rule names either a cidr or pods (namespace and/or podLabels)" },
          { rule: "!has(self.except) || has(self.cidr)", message: "except is only valid with cidr", fieldPath: ".except" },
        ],
      },
    ),
  };
}
