/**
 * The API process on Deno 2: the same app as src/server.ts (which serves it on Bun), through
 * Deno.serve and the app's web-standard `fetch`. Run with `npm run api:deno`.
 */
import { createApp, createAppDeps } from './app';
import { loadConfig } from './config';
import { logger } from './log';

/** The part of Deno's runtime API this entry uses (the project's types are Bun's). */
declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen?: (address: { port: number }) => void },
    handler: (request: Request) => Response | Promise<Response>,
  ): { shutdown(): Promise<void> };
  addSignalListener(signal: 'SIGINT' | 'SIGTERM', handler: () => void): void;
  exit(code: number): never;
};

const config = loadConfig();
const deps = createAppDeps(config);
const { sql, temporal, telemetry } = deps;
const app = createApp(deps);
const server = Deno.serve(
  {
    port: config.port,
    hostname: '0.0.0.0',
    onListen: ({ port }) =>
      logger.info('API listening', { port, runtime: 'deno', taskQueue: config.temporal.taskQueue }),
  },
  (request) => app.fetch(request),
);

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info('API stopping', { signal });
  await server.shutdown();
  await Promise.allSettled([sql.end({ timeout: 5 }), temporal.connection.close(), telemetry.shutdown()]);
  Deno.exit(0);
}
Deno.addSignalListener('SIGINT', () => void stop('SIGINT'));
Deno.addSignalListener('SIGTERM', () => void stop('SIGTERM'));
