/** Structured JSON-lines logging for the API and scripts (workflows and activities use the SDK's log). */
type Level = 'debug' | 'info' | 'warn' | 'error';
type Fields = Record<string, unknown>;

function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  return { name: error.name, message: error.message, stack: error.stack, cause: serializeError(error.cause) };
}

function write(level: Level, message: string, fields: Fields = {}): void {
  const entry: Fields = { time: new Date().toISOString(), level, message };
  for (const [key, value] of Object.entries(fields)) entry[key] = key === 'error' ? serializeError(value) : value;
  process.stderr.write(`${JSON.stringify(entry)}\n`);
}

export const logger = {
  debug: (message: string, fields?: Fields) => write('debug', message, fields),
  info: (message: string, fields?: Fields) => write('info', message, fields),
  warn: (message: string, fields?: Fields) => write('warn', message, fields),
  error: (message: string, fields?: Fields) => write('error', message, fields),
};
