/**
 * @module The egress a pool's pods may open besides NATS and DNS, as the
 * operator renders it into the pool's NetworkPolicy
 * (resources/network-policy.ts): CIDR blocks with optional ports. Used by
 * ToolPools (an http or mcp tool's server) and EnginePools (an `openai`
 * backend's upstream). Validated by the API server: a block must be a CIDR
 * (CEL `isCIDR`), ports 1-65535.
 */
import { int, object, oneOf, str, type OpenApiSchema } from "./schema.js";

export const EGRESS_PROTOCOLS = ["TCP", "UDP", "SCTP"] as const;
export type EgressProtocol = (typeof EGRESS_PROTOCOLS)[number];

export interface EgressPort {
  port: number;
  /** A range `port`..`endPort`. */
  endPort?: number;
  /** Default TCP. */
  protocol?: EgressProtocol;
}

/** One destination the pool's pods may reach. */
export interface EgressRule {
  /** An IPv4 or IPv6 block, e.g. 203.0.113.0/24. */
  cidr: string;
  /** Blocks inside `cidr` that stay closed. */
  except?: string[];
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
      "A CIDR block and, optionally, its ports.",
      {
        cidr: cidr("The destination block."),
        except: { type: "array", description: "Blocks inside cidr that stay closed.", maxItems: 32, items: cidr("A block inside cidr.") },
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
      { required: ["cidr"] },
    ),
  };
}
