/**
 * @module A real Envoy as the gateway in front of an EnginePool, configured
 * the way Gateway API Inference Extension data planes configure it for an
 * InferencePool (GAIE's own test bootstrap has this shape):
 *
 * - an `ext_proc` HTTP filter calling the endpoint picker's gRPC cluster
 *   over HTTP/2, request and response headers sent, bodies
 *   `FULL_DUPLEX_STREAMED` (trailers sent, as that mode requires);
 * - `metadata_options`: the subset hint (`envoy.lb.subset_hint`) forwarded
 *   to the picker, and `envoy.lb` received from it (without
 *   `receiving_namespaces` Envoy drops the picker's dynamic metadata);
 * - every route to an `ORIGINAL_DST` cluster that connects to the address
 *   the picker put in `x-gateway-destination-endpoint`; or, for a data plane
 *   that walks the picker's fallback list, a cluster of the pool's endpoints
 *   with Envoy's override-host load balancer (the header, then the
 *   `envoy.lb` metadata) and retries that move down the list.
 *
 * {@link envoyBootstrap} is pure (the cluster test renders the same bootstrap
 * into a ConfigMap); {@link EnvoyGateway} runs the binary from
 * `hack/tools/85-envoy.sh` on loopback with free ports. An optional request
 * header is copied into the subset hint (`header_to_metadata`), so a test can
 * send a hint per request as a gateway's routing would; an optional access
 * log records how long Envoy waited on the picker in each phase.
 */
import { spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startProcess, stopProcess, tail } from "./control-plane.js";
import { freePort, retryOnPortTaken } from "./free-port.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export const DESTINATION_HEADER = "x-gateway-destination-endpoint";

export interface EnvoyBootstrapOptions {
  /** Listener address and port. */
  listen: { address: string; port: number };
  /** Admin interface (stats, readiness). */
  admin: { address: string; port: number };
  /** The picker's gRPC endpoints (IP addresses: a STATIC cluster). */
  pickers: { address: string; port: number }[];
  /** How long the picker may take to answer one message (it holds a request while a full engine's prefix is worth waiting for). */
  messageTimeoutMs?: number;
  /** A request header whose value (`ip:port,...`) becomes the subset hint; absent: none. */
  subsetHintHeader?: string;
  /** Health-check the picker replicas over gRPC health (service `envoy.service.ext_proc.v3.ExternalProcessor`). */
  pickerHealthChecks?: boolean;
  /** A JSON access log per request with Envoy's own timing of each ext_proc phase ({@link ExtProcTiming}). */
  accessLogPath?: string;
  /**
   * The pool's endpoints (what a gateway reads from the InferencePool's
   * selector and target ports): route through Envoy's override-host load
   * balancer, which tries the picker's list in order on a refused
   * connection or a 429/503, instead of `ORIGINAL_DST` (one address).
   */
  poolEndpoints?: { address: string; port: number }[];
}

/**
 * One request's access-log line: how long Envoy waited on the picker in
 * each phase (its ext_proc filter state, microseconds), and the upstream's
 * own time. `request_header_us` is the pick as the data plane sees it: the
 * picker answers the headers once the body has arrived and placement is done.
 */
export interface ExtProcTiming {
  path: string;
  status: number;
  request_header_us: number;
  request_body_us: number;
  response_header_us: number;
  response_body_us: number;
  response_body_calls: number;
  /** `x-envoy-upstream-service-time`: the engine's time, ms (absent for answers the picker gave itself). */
  upstream_ms?: number;
  duration_ms: number;
}

const EXT_PROC_FIELD = (name: string): string => `%FILTER_STATE(envoy.filters.http.ext_proc:FIELD:${name})%`;

function accessLog(path: string): unknown[] {
  return [
    {
      name: "envoy.access_loggers.file",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
        path,
        log_format: {
          json_format: {
            path: "%REQ(:PATH)%",
            status: "%RESPONSE_CODE%",
            request_header_us: EXT_PROC_FIELD("request_header_latency_us"),
            request_body_us: EXT_PROC_FIELD("request_body_total_latency_us"),
            response_header_us: EXT_PROC_FIELD("response_header_latency_us"),
            response_body_us: EXT_PROC_FIELD("response_body_total_latency_us"),
            response_body_calls: EXT_PROC_FIELD("response_body_call_count"),
            upstream_ms: "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",
            duration_ms: "%DURATION%",
          },
        },
      },
    },
  ];
}

const HTTP_PROTOCOL_OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";

/** The pool as GAIE's reference data plane routes to it: one address, from the picker's header. */
const ORIGINAL_DST_POOL = {
  name: "inference-pool",
  type: "ORIGINAL_DST",
  lb_policy: "CLUSTER_PROVIDED",
  connect_timeout: "2s",
  original_dst_lb_config: { use_http_header: true, http_header_name: DESTINATION_HEADER },
};

/** Down the picker's list when an engine refuses the connection or the request (full, shutting down). */
const FALLBACK_RETRIES = { retry_on: "connect-failure,refused-stream,reset,retriable-status-codes", retriable_status_codes: [429, 503], num_retries: 2 };

/** The pool's endpoints behind Envoy's override-host load balancer: the picker's list in order, then round robin. */
function overrideHostPool(endpoints: readonly { address: string; port: number }[]): Record<string, unknown> {
  return {
    name: "inference-pool",
    type: "STATIC",
    connect_timeout: "2s",
    load_assignment: {
      cluster_name: "inference-pool",
      endpoints: [{ lb_endpoints: endpoints.map((e) => ({ endpoint: { address: { socket_address: { address: e.address, port_value: e.port } } } })) }],
    },
    load_balancing_policy: {
      policies: [
        {
          typed_extension_config: {
            name: "envoy.load_balancing_policies.override_host",
            typed_config: {
              "@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.override_host.v3.OverrideHost",
              override_host_sources: [{ header: DESTINATION_HEADER }, { metadata: { key: "envoy.lb", path: [{ key: DESTINATION_HEADER }] } }],
              fallback_policy: {
                policies: [
                  {
                    typed_extension_config: {
                      name: "envoy.load_balancing_policies.round_robin",
                      typed_config: { "@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin" },
                    },
                  },
                ],
              },
            },
          },
        },
      ],
    },
  };
}

/** The Envoy bootstrap (JSON, which Envoy reads as YAML's superset). */
export function envoyBootstrap(o: EnvoyBootstrapOptions): Record<string, unknown> {
  const ms = (n: number): string => `${(n / 1000).toFixed(3)}s`;
  const httpFilters: unknown[] = [];
  if (o.subsetHintHeader !== undefined) {
    httpFilters.push({
      name: "envoy.filters.http.header_to_metadata",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.header_to_metadata.v3.Config",
        request_rules: [
          {
            header: o.subsetHintHeader,
            on_header_present: { metadata_namespace: "envoy.lb.subset_hint", key: "x-gateway-destination-endpoint-subset", type: "STRING" },
            remove: true,
          },
        ],
      },
    });
  }
  httpFilters.push(
    {
      name: "envoy.filters.http.ext_proc",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
        grpc_service: {
          envoy_grpc: { cluster_name: "endpoint-picker" },
          timeout: "30s",
          // While a picker restarts: the stream is opened again, not failed (requests not yet picked wait).
          retry_policy: { retry_on: "connect-failure,refused-stream,reset,unavailable", retry_back_off: { base_interval: "0.05s", max_interval: "1s" }, num_retries: 40 },
        },
        failure_mode_allow: false,
        processing_mode: {
          request_header_mode: "SEND",
          response_header_mode: "SEND",
          request_body_mode: "FULL_DUPLEX_STREAMED",
          response_body_mode: "FULL_DUPLEX_STREAMED",
          request_trailer_mode: "SEND",
          response_trailer_mode: "SEND",
        },
        message_timeout: ms(o.messageTimeoutMs ?? 10_000),
        metadata_options: {
          forwarding_namespaces: { untyped: ["envoy.lb.subset_hint", "envoy.lb"] },
          receiving_namespaces: { untyped: ["envoy.lb"] },
        },
      },
    },
    { name: "envoy.filters.http.router", typed_config: { "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" } },
  );
  const picker: Record<string, unknown> = {
    name: "endpoint-picker",
    type: "STATIC",
    connect_timeout: "1s",
    lb_policy: "LEAST_REQUEST",
    // Envoy allows 3 concurrent retries per cluster by default: a burst waiting out a picker restart needs more.
    circuit_breakers: { thresholds: [{ max_retries: 10_000, max_requests: 100_000, max_pending_requests: 100_000 }] },
    typed_extension_protocol_options: {
      [HTTP_PROTOCOL_OPTIONS]: { "@type": `type.googleapis.com/${HTTP_PROTOCOL_OPTIONS}`, explicit_http_config: { http2_protocol_options: {} } },
    },
    load_assignment: {
      cluster_name: "endpoint-picker",
      endpoints: [{ lb_endpoints: o.pickers.map((p) => ({ endpoint: { address: { socket_address: { address: p.address, port_value: p.port } } } })) }],
    },
  };
  if (o.pickerHealthChecks === true) {
    picker["health_checks"] = [
      {
        timeout: "1s",
        interval: "0.5s",
        unhealthy_threshold: 1,
        healthy_threshold: 1,
        no_traffic_interval: "0.5s",
        grpc_health_check: { service_name: "envoy.service.ext_proc.v3.ExternalProcessor" },
      },
    ];
  }
  return {
    admin: { address: { socket_address: { address: o.admin.address, port_value: o.admin.port } } },
    static_resources: {
      listeners: [
        {
          name: "gateway",
          address: { socket_address: { address: o.listen.address, port_value: o.listen.port } },
          filter_chains: [
            {
              filters: [
                {
                  name: "envoy.filters.network.http_connection_manager",
                  typed_config: {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    stat_prefix: "gateway",
                    ...(o.accessLogPath !== undefined ? { access_log: accessLog(o.accessLogPath) } : {}),
                    // Event streams stay open as long as sessions run.
                    stream_idle_timeout: "0s",
                    route_config: {
                      name: "inference-pool",
                      virtual_hosts: [
                        {
                          name: "inference-pool",
                          domains: ["*"],
                          routes: [
                            {
                              match: { prefix: "/" },
                              route: { cluster: "inference-pool", timeout: "0s", ...(o.poolEndpoints !== undefined ? { retry_policy: FALLBACK_RETRIES } : {}) },
                              // Which endpoint served (after any retry down the list), for the picker's response phase.
                              response_headers_to_add: [{ header: { key: "x-gateway-destination-endpoint-served", value: "%UPSTREAM_HOST%" }, append_action: "OVERWRITE_IF_EXISTS_OR_ADD" }],
                            },
                          ],
                        },
                      ],
                    },
                    http_filters: httpFilters,
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        picker,
        o.poolEndpoints === undefined ? ORIGINAL_DST_POOL : overrideHostPool(o.poolEndpoints),
      ],
    },
  };
}

/** The cached Envoy binary, installed on demand. */
export function envoyBinary(): string {
  const bin = join(process.env["INTERLACE_BIN"] ?? join(process.env["INTERLACE_CACHE"] ?? join(ROOT, ".cache"), "bin"), "envoy");
  if (!existsSync(bin)) {
    const r = spawnSync("bash", [join(ROOT, "hack/tools/85-envoy.sh")], { stdio: "inherit" });
    if (r.status !== 0 || !existsSync(bin)) throw new Error(`envoy is not installed and hack/tools/85-envoy.sh failed (status ${r.status})`);
  }
  return bin;
}

export interface EnvoyGatewayOptions extends Partial<Pick<EnvoyBootstrapOptions, "messageTimeoutMs" | "subsetHintHeader" | "pickerHealthChecks" | "poolEndpoints">> {
  /** gRPC ports of the picker replicas on 127.0.0.1. */
  pickerPorts: number[];
  /** Envoy's own log level (default warning). */
  logLevel?: string;
  /** Write the per-request ext_proc timing log ({@link EnvoyGateway.timings}). */
  timings?: boolean;
}

/** A running Envoy on loopback. */
export class EnvoyGateway {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    /** The gateway's base URL (`http://127.0.0.1:<port>`). */
    readonly url: string,
    readonly adminUrl: string,
  ) {}

  /**
   * Starts Envoy on free loopback ports. A port found free can be taken by
   * another process before Envoy binds it (tests run in parallel): that
   * start is retried on new ports, twice at most.
   */
  static start(options: EnvoyGatewayOptions): Promise<EnvoyGateway> {
    return retryOnPortTaken(() => EnvoyGateway.startOnce(options), 3);
  }

  private static async startOnce(options: EnvoyGatewayOptions): Promise<EnvoyGateway> {
    const bin = envoyBinary();
    const dir = mkdtempSync(join(tmpdir(), "interlace-envoy-"));
    const [port, adminPort] = [await freePort(), await freePort()];
    const bootstrap = envoyBootstrap({
      listen: { address: "127.0.0.1", port },
      admin: { address: "127.0.0.1", port: adminPort },
      pickers: options.pickerPorts.map((p) => ({ address: "127.0.0.1", port: p })),
      ...(options.messageTimeoutMs !== undefined ? { messageTimeoutMs: options.messageTimeoutMs } : {}),
      ...(options.subsetHintHeader !== undefined ? { subsetHintHeader: options.subsetHintHeader } : {}),
      ...(options.pickerHealthChecks !== undefined ? { pickerHealthChecks: options.pickerHealthChecks } : {}),
      ...(options.timings === true ? { accessLogPath: join(dir, "access.log") } : {}),
      ...(options.poolEndpoints !== undefined ? { poolEndpoints: options.poolEndpoints } : {}),
    });
    const config = join(dir, "envoy.json");
    writeFileSync(config, JSON.stringify(bootstrap, null, 2));
    const logFile = join(dir, "envoy.log");
    // --base-id from the port: several Envoys on one machine must not share shared-memory ids.
    const args = ["-c", config, "--log-level", options.logLevel ?? "warning", "--base-id", String(port), "--concurrency", "2", "--disable-hot-restart"];
    const child = await startProcess(bin, args, logFile);
    const gateway = new EnvoyGateway(child, dir, `http://127.0.0.1:${port}`, `http://127.0.0.1:${adminPort}`);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const live = await fetch(`${gateway.adminUrl}/ready`).then((r) => r.ok).catch(() => false);
      if (live) return gateway;
      if (child.exitCode !== null || Date.now() > deadline) {
        const log = await tail(logFile, 40);
        await gateway.stop();
        throw new Error(`envoy did not become ready: ${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Envoy's counters and gauges (`/stats`), by name. */
  async stats(filter = ""): Promise<Map<string, number>> {
    const text = await (await fetch(`${this.adminUrl}/stats?filter=${encodeURIComponent(filter)}`)).text();
    const out = new Map<string, number>();
    for (const line of text.split("\n")) {
      const m = /^([^:]+): (\d+)$/.exec(line);
      if (m !== null) out.set(m[1]!, Number(m[2]));
    }
    return out;
  }

  /** Every request's ext_proc timing so far (with `timings: true`; Envoy flushes its access log about once a second). */
  async timings(): Promise<ExtProcTiming[]> {
    const text = await readFile(join(this.dir, "access.log"), "utf8").catch(() => "");
    const num = (v: unknown): number => (typeof v === "number" ? v : Number(v));
    return text
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => {
        const r = JSON.parse(l) as Record<string, unknown>;
        const upstream = num(r["upstream_ms"]);
        return {
          path: String(r["path"]),
          status: num(r["status"]),
          request_header_us: num(r["request_header_us"]),
          request_body_us: num(r["request_body_us"]),
          response_header_us: num(r["response_header_us"]),
          response_body_us: num(r["response_body_us"]),
          response_body_calls: num(r["response_body_calls"]),
          ...(Number.isFinite(upstream) ? { upstream_ms: upstream } : {}),
          duration_ms: num(r["duration_ms"]),
        };
      });
  }

  /** The last lines of Envoy's log (for failure messages). */
  log(lines = 40): Promise<string> {
    return tail(join(this.dir, "envoy.log"), lines);
  }

  async stop(): Promise<void> {
    await stopProcess(this.child, 5_000);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
