/**
 * Structured JSON-lines logging for the API, the worker and scripts: one line per event on stderr,
 * with `trace_id` and `span_id` when a span is active. Workflows and activities log through the
 * SDK's `log`, which the worker's Runtime turns into the same lines (`sdkLogFunction`).
 */
import { currentTraceIds } from './telemetry/trace-context';

type Level = 'debug' | 'info' | 'warn' | 'error';
type Fields = Record<string, unknown>;

function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  return { name: error.name, message: error.message, stack: error.stack, cause: serializeError(error.cause) };
}

/** JSON of a log line: errors keep their name, message, stack and cause; bigints become strings. */
function toJson(entry: Fields): string {
  try {
    return JSON.stringify(entry, (key, value: unknown) =>
      typeof value === 'bigint'
        ? value.toString()
        : value instanceof Error && key !== ''
          ? serializeError(value)
          : value,
    );
  } catch (error) {
    // A field JSON cannot hold (a cycle): keep the line, name the problem.
    return JSON.stringify({
      time: entry.time,
      level: entry.level,
      message: entry.message,
      unserializable: String(error),
    });
  }
}

function write(level: Level, message: string, fields: Fields = {}): void {
  const entry: Fields = { time: new Date().toISOString(), level, message, ...currentTraceIds() };
  for (const [key, value] of Object.entries(fields)) entry[key] = key === 'error' ? serializeError(value) : value;
  process.stderr.write(`${toJson(entry)}\n`);
}

export const logger = {
  debug: (message: string, fields?: Fields) => write('debug', message, fields),
  info: (message: string, fields?: Fields) => write('info', message, fields),
  warn: (message: string, fields?: Fields) => write('warn', message, fields),
  error: (message: string, fields?: Fields) => write('error', message, fields),
};

/** A log entry as the Temporal SDK's `DefaultLogger` hands it to its log function. */
type SdkLogEntry = { level: string; message: string; meta?: Record<string, unknown>; timestampNanos: bigint };

/**
 * The worker Runtime's log function: the SDK's, workflows' and activities' logs as the same JSON
 * lines. Workflow and activity lines already carry `trace_id`/`span_id` from the OpenTelemetry
 * interceptors when their workflow is traced; others get the active span's, if any.
 */
export function sdkLogFunction({ level, message, meta, timestampNanos }: SdkLogEntry): void {
  const entry: Fields = {
    time: new Date(Number(timestampNanos / 1_000_000n)).toISOString(),
    level: level.toLowerCase(),
    message,
    ...currentTraceIds(),
    ...meta,
  };
  process.stderr.write(`${toJson(entry)}\n`);
}
