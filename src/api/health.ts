import { Elysia } from 'elysia';
import * as v from 'valibot';
import { ping } from '../db';
import type { AppDeps } from '../http/context';
import { jsonResponse } from '../http/request';
import { routeDocs } from '../http/route-docs';

const Reachability = v.picklist(['ok', 'unreachable']);
const HealthSchema = v.pipe(
  v.object({ status: v.picklist(['ok', 'unavailable']), postgres: Reachability, temporal: Reachability }),
  v.description('Whether PostgreSQL and Temporal answer (within 2 seconds each).'),
);

const LivenessSchema = v.pipe(v.object({ status: v.literal('ok') }), v.description('The process serves requests.'));

const CHECK_TIMEOUT_MS = 2000;

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function reachable(check: () => Promise<unknown>): Promise<'ok' | 'unreachable'> {
  try {
    await within(CHECK_TIMEOUT_MS, check());
    return 'ok';
  } catch {
    return 'unreachable';
  }
}

let draining = false;
/**
 * From SIGTERM on (src/server.ts), readiness fails whatever PostgreSQL and Temporal say, so the load
 * balancer drains this process.
 */
export function startDraining(): void {
  draining = true;
}

/**
 * Health without auth: `/livez` says the process serves requests (no dependency is asked, so a
 * PostgreSQL or Temporal outage never gets the process restarted); `/readyz` and `/healthz` (the
 * same answer, `/healthz` kept for existing checks) are 200 when PostgreSQL and Temporal both
 * answer, 503 otherwise (and from SIGTERM on), so a load balancer sends traffic elsewhere meanwhile.
 */
export const healthRoutes = ({ sql, temporal }: AppDeps) => {
  async function readiness(): Promise<Response> {
    const [postgres, temporalStatus] = await Promise.all([
      reachable(() => ping(sql)),
      reachable(() => temporal.workflowService.getSystemInfo({})),
    ]);
    const healthy = postgres === 'ok' && temporalStatus === 'ok' && !draining;
    return jsonResponse(healthy ? 200 : 503, {
      status: healthy ? 'ok' : 'unavailable',
      postgres,
      temporal: temporalStatus,
    });
  }
  const readinessDocs = (operationId: string, summary: string) =>
    routeDocs({
      operationId,
      summary,
      tags: ['Service'],
      caller: 'anyone',
      responses: {
        200: {
          description: 'PostgreSQL and Temporal both answer.',
          schema: HealthSchema,
          example: { status: 'ok', postgres: 'ok', temporal: 'ok' },
        },
        503: {
          description: 'PostgreSQL or Temporal does not answer.',
          schema: HealthSchema,
          example: { status: 'unavailable', postgres: 'ok', temporal: 'unreachable' },
        },
      },
    });
  return new Elysia({ name: 'health' })
    .get(
      '/livez',
      () => jsonResponse(200, { status: 'ok' }),
      routeDocs({
        operationId: 'liveness',
        summary: 'Liveness: the process serves requests',
        description: 'Asks no dependency, so an outage of PostgreSQL or Temporal never gets the process restarted.',
        tags: ['Service'],
        caller: 'anyone',
        responses: {
          200: { description: 'The process serves requests.', schema: LivenessSchema, example: { status: 'ok' } },
        },
      }),
    )
    .get('/readyz', readiness, readinessDocs('readiness', 'Readiness: PostgreSQL and Temporal answer'))
    .get('/healthz', readiness, readinessDocs('health', 'Health of the service (the same answer as /readyz)'));
};
