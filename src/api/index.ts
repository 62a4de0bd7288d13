/**
 * The REST API as one plugin: every resource's routes (one Elysia module each), the operators'
 * callbacks, health, metrics and the OpenAPI document. The composition (src/app.ts) mounts it
 * beside the web console, under the request pipeline both share.
 */
import { Elysia } from 'elysia';
import type { AppDeps } from '../http/context';
import { errorResponse } from '../http/request';
import type { DocumentedRoute } from './openapi';
import { auditEventRoutes } from './audit-events';
import { billRoutes, inBillsEnvelope } from './bills';
import { catalogRoutes } from './catalog';
import { collectionRequestRoutes } from './collection-requests';
import { collectionRoutes } from './collections';
import { contactRoutes } from './contacts';
import { eventRoutes } from './events';
import { healthRoutes } from './health';
import { isMetricsPage, metricsRoutes } from './metrics';
import { networkCallbackRoutes } from './network-callbacks';
import { networkStatusRoutes } from './network-status';
import { documentationRoutes, isDocumentationPage } from './openapi';
import { operatorCallbackRoutes } from './operator-callbacks';
import { paymentBatchRoutes } from './payment-batches';
import { paymentRoutes } from './payments';
import { reversalRoutes } from './reversals';
import { settlementRoutes } from './settlements';
import { accountRoutes, transactionRoutes } from './wallets';
import { webhookRoutes } from './webhooks';

/** The API's routes; `documented` lists the API routes the OpenAPI document describes. */
export const apiRoutes = (deps: AppDeps, documented: () => readonly DocumentedRoute[]) =>
  new Elysia({ name: 'api' })
    .use(healthRoutes(deps))
    .use(metricsRoutes(deps.config))
    .use(contactRoutes(deps))
    .use(eventRoutes(deps))
    .use(collectionRequestRoutes(deps))
    .use(collectionRoutes(deps))
    .use(networkCallbackRoutes(deps))
    .use(operatorCallbackRoutes(deps))
    .use(webhookRoutes(deps))
    .use(billRoutes(deps))
    .use(paymentRoutes(deps))
    .use(paymentBatchRoutes(deps))
    .use(reversalRoutes(deps))
    .use(accountRoutes(deps))
    .use(transactionRoutes(deps))
    .use(settlementRoutes(deps))
    .use(catalogRoutes(deps))
    .use(networkStatusRoutes(deps))
    .use(auditEventRoutes(deps))
    .use(documentationRoutes(deps.config, documented));

/** A CSV download of the API (a batch's results, a wallet's statement): its path ends in `.csv`. */
const CSV_DOWNLOAD = /^\/api\/.+\.csv\/?$/i;

/**
 * The docs page is HTML for browsers, /metrics is Prometheus text and the `.csv` downloads are CSV: the only API paths
 * the JSON-only Accept rule skips.
 */
export const isNonJsonApiPage = (request: Request): boolean =>
  isDocumentationPage(request) || isMetricsPage(request) || CSV_DOWNLOAD.test(new URL(request.url).pathname);

/** An error as the API answers it: the API's JSON error body (the bill-payment routes' envelope around theirs). */
export function apiErrorResponse(
  code: unknown,
  error: unknown,
  request: Request,
  allowedMethods: (path: string) => string[],
): Promise<Response> {
  return inBillsEnvelope(request, errorResponse(code, error, request, allowedMethods));
}
