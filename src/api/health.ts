import { Elysia } from 'elysia';
import type { AppDeps } from './context';
import { jsonResponse } from './http';

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

/**
 * Health without auth: `/livez` says the process serves requests (no dependency is asked, so a
 * PostgreSQL or Temporal outage never gets the process restarted); `/readyz` and `/healthz` (the
 * same answer, `/healthz` kept for existing checks) are 200 when PostgreSQL and Temporal both
 * answer, 503 otherwise, so a load balancer sends traffic elsewhere meanwhile.
 */
export const healthRoutes = ({ sql, temporal }: AppDeps) => {
  async function readiness(): Promise<Response> {
    const [postgres, temporalStatus] = await Promise.all([
      reachable(() => sql`select 1`),
      reachable(() => temporal.workflowService.getSystemInfo({})),
    ]);
    const healthy = postgres === 'ok' && temporalStatus === 'ok';
    return jsonResponse(healthy ? 200 : 503, { status: healthy ? 'ok' : 'unavailable', postgres, temporal: temporalStatus });
  }
  return new Elysia({ name: 'health' })
    .get('/livez', () => jsonResponse(200, { status: 'ok' }))
    .get('/readyz', readiness)
    .get('/healthz', readiness);
};
