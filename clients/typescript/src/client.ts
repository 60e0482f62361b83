/**
 * @module The client of one AgentApp on an Interlace router: programs of
 * semantic functions, the app's own functions by name, and sessions.
 */
import { appFunction, type SemanticFunction } from "./functions.js";
import { Program } from "./program.js";
import { Session, type SessionRequest } from "./session.js";
import { Transport, type TransportOptions } from "./transport.js";

export type InterlaceOptions = TransportOptions;

export class Interlace {
  private readonly transport: Transport;

  constructor(options: InterlaceOptions) {
    this.transport = new Transport(options);
  }

  /** A new program; its calls go to the router as they are made (`program.call`). */
  program(): Program {
    return new Program(this.transport);
  }

  /**
   * One of the AgentApp's own semantic functions, by name (its input and
   * output names read from the router; give them as `I` and `O` to have them
   * typed).
   */
  async function<I extends string = string, O extends string = string>(name: string): Promise<SemanticFunction<I, O>> {
    const app = (await (await this.transport.request("GET", "")).json()) as { namespace: string; name: string; functions?: { name: string; inputs: string[]; outputs: string[] }[] };
    const fn = app.functions?.find((f) => f.name === name);
    if (fn === undefined) throw new Error(`AgentApp ${app.namespace}/${app.name} has no semantic function "${name}" (it has ${app.functions?.map((f) => f.name).join(", ") || "none"})`);
    return appFunction(fn.name, { inputs: fn.inputs as I[], outputs: fn.outputs as O[] });
  }

  /** Opens a session (placed by the router); read it with `events()`. */
  async session(request: SessionRequest): Promise<Session> {
    const res = await this.transport.request("POST", "sessions", request);
    return new Session(this.transport, (await res.json()) as ConstructorParameters<typeof Session>[1]);
  }
}
