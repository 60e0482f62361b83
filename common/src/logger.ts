/**
 * @module Structured JSON logging (pino). One root logger per process; components
 * take child loggers tagged with what they own (`{component}`, `{session}`).
 */
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(component: string, level = process.env["LOG_LEVEL"] ?? "info"): Logger {
  return pino({ level, base: { component } });
}
