/**
 * The generated OpenAPI document (`/openapi/json`) and its docs page (`/openapi`), from
 * @elysiajs/openapi: every route the app serves appears in it without being listed by hand.
 */
import { openapi } from '@elysiajs/openapi';
import type { Config } from '../config';
import { CURRENT_API_VERSION, formatApiVersion } from '../domain/versions';

export const DOCS_PATH = '/openapi';
export const OPENAPI_DOCUMENT_PATH = `${DOCS_PATH}/json`;

/** The docs page is HTML for browsers, so it is the one route the JSON-only Accept rule skips. */
export function isDocumentationPage(request: Request): boolean {
  const { pathname } = new URL(request.url);
  return pathname === DOCS_PATH || pathname === `${DOCS_PATH}/`;
}

export const documentationRoutes = (config: Config) =>
  openapi({
    path: DOCS_PATH,
    specPath: OPENAPI_DOCUMENT_PATH,
    documentation: {
      info: {
        title: 'Mobile-money collections API',
        version: formatApiVersion(CURRENT_API_VERSION),
        description:
          'Collections, collection requests, contacts, webhooks, events and bill-payment listings. ' +
          'Every /api route also answers under /api/v1/ … /api/v4/ (or with an Api-Version header).',
      },
      ...(config.publicBaseUrl ? { servers: [{ url: config.publicBaseUrl }] } : {}),
      components: {
        securitySchemes: {
          token: { type: 'apiKey', in: 'header', name: 'Authorization', description: '`Token <API key>` (`Bearer <API key>` is accepted too)' },
        },
      },
      security: [{ token: [] }],
    },
  });
