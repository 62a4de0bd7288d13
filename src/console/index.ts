/**
 * The merchant web console (`/console`): server-rendered pages served by the API process, signed
 * in with console sessions (not API keys), reading and writing through the services the REST
 * routes use. Console routes are hidden from the OpenAPI document.
 */
import { readFileSync } from 'node:fs';
import { Elysia } from 'elysia';
import type { AppDeps } from '../http/context';
import { auditRoutes } from './pages/audit';
import { collectionRoutes } from './pages/collections';
import { contactRoutes } from './pages/contacts';
import { eventRoutes } from './pages/events';
import { overviewRoutes } from './pages/overview';
import { paymentBatchRoutes } from './pages/payment-batches';
import { paymentRoutes } from './pages/payments';
import { requestRoutes } from './pages/requests';
import { reversalRoutes } from './pages/reversals';
import { sandboxRoutes } from './pages/sandbox';
import { settingsRoutes } from './pages/settings';
import { settlementRoutes } from './pages/settlements';
import { signInRoutes } from './pages/sign-in';
import { walletRoutes } from './pages/wallets';
import { webhookRoutes } from './pages/webhooks';

export { consoleErrorResponse, isConsolePath } from './http';

const staticFile = (name: string, contentType: string) => {
  const body = readFileSync(new URL(`./static/${name}`, import.meta.url), 'utf8');
  return () =>
    new Response(body, {
      headers: {
        'Content-Type': contentType,
        'Cache-Control': 'public, max-age=300',
        'X-Content-Type-Options': 'nosniff',
      },
    });
};

export const consoleRoutes = (deps: AppDeps) =>
  new Elysia({ name: 'console' })
    .guard({ detail: { hide: true } })
    .get('/console/static/console.css', staticFile('console.css', 'text/css; charset=utf-8'))
    .get('/console/static/console.js', staticFile('console.js', 'text/javascript; charset=utf-8'))
    .use(signInRoutes(deps))
    .use(overviewRoutes(deps))
    .use(requestRoutes(deps))
    .use(collectionRoutes(deps))
    .use(paymentRoutes(deps))
    .use(paymentBatchRoutes(deps))
    .use(walletRoutes(deps))
    .use(settlementRoutes(deps))
    .use(reversalRoutes(deps))
    .use(contactRoutes(deps))
    .use(eventRoutes(deps))
    .use(webhookRoutes(deps))
    .use(settingsRoutes(deps))
    .use(auditRoutes(deps))
    .use(sandboxRoutes(deps));
