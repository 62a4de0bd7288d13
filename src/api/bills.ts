/**
 * Bill-payment listing endpoints (docs/api.md#bill-payments) under `{bills_url}/api/bills/`. The same API keys
 * authorize them (`Token` or `Bearer`), and throttling, versions and duplicate checks apply as on
 * every authenticated route; every answer, errors included, is the bill-payment envelope.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import {
  BillServiceSchema,
  ElectricityBillerSchema,
  PinBundleSchema,
  SERVICE_GROUPINGS,
  billsEnvelope,
  billsEnvelopeSchema,
  groupBillServices,
  parseRfcDate,
  serializeBillService,
  serializeElectricityBiller,
  serializePinBundle,
} from '../domain/bills';
import {
  listBillServices,
  listElectricityBillers,
  listPinBundles,
  pinBundleProviders,
} from '../services/collections/bills';
import { writeOnce } from '../services/collections/duplicate-checks';
import { authPlugin } from '../http/auth';
import type { AppDeps } from '../http/context';
import { fieldErrors } from '../domain/errors';
import { REQUIRED, text } from '../domain/input';
import { jsonResponse } from '../http/request';
import { requestSchema, routeDocs, type RouteOperation } from '../http/route-docs';

const BILLS_PREFIX = '/api/bills';
const BILLS_DATE_HEADER = 'Bills-date';

const choice = (issue: v.BaseIssue<unknown>) =>
  `Select a valid choice. ${String(issue.input)} is not one of the available choices.`;
const ServicesQuery = v.object({
  groupby: v.optional(
    v.pipe(
      v.picklist(SERVICE_GROUPINGS, choice),
      v.description('Group the services by `category` (the default) or by biller.'),
    ),
    'category',
  ),
});
const BundlesBody = v.object(
  {
    service_type: v.pipe(
      text(40),
      v.toLowerCase(),
      v.description('A provider: glo, mtn, airtel, 9mobile or spectranet.'),
    ),
  },
  REQUIRED,
);

const BILLS_DATE_REQUIRED = `The ${BILLS_DATE_HEADER} header is required.`;
/** The `Bills-date` header of the pin-bundle request (Elysia names headers in lower case). */
const BundlesHeaders = v.object(
  {
    'bills-date': v.pipe(
      v.string(BILLS_DATE_REQUIRED),
      v.description("The request's date, RFC 7231 or RFC 2822, such as `Tue, 15 Nov 1994 08:12:31 GMT`."),
      v.trim(),
      v.nonEmpty(BILLS_DATE_REQUIRED),
      v.check(
        (header) => parseRfcDate(header) !== null,
        [
          `The ${BILLS_DATE_HEADER} header must be a date in RFC 7231 or RFC 2822 format,`,
          'such as "Tue, 15 Nov 1994 08:12:31 GMT".',
        ].join(' '),
      ),
    ),
  },
  BILLS_DATE_REQUIRED,
);

/**
 * OpenAPI details of a bill-payment route: its tag, errors in the envelope and, when configured, `{bills_url}` as its
 * server.
 */
const billsDocs = (config: AppDeps['config'], operation: Omit<RouteOperation, 'tags' | 'caller' | 'billsEnvelope'>) =>
  routeDocs(
    { ...operation, tags: ['Bill payments'], caller: 'merchant', billsEnvelope: true },
    config.billsBaseUrl ? { servers: [{ url: config.billsBaseUrl }] } : {},
  );

export const billRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'bills', prefix: BILLS_PREFIX })
    .use(authPlugin(sql))
    .get(
      '/billers/services/list',
      async ({ query: { groupby } }) => {
        const services = (await listBillServices(sql)).map(serializeBillService);
        return billsEnvelope(groupBillServices(services, groupby), 'Billers and services retrieved successfully.');
      },
      {
        can: 'view',
        query: requestSchema(ServicesQuery),
        ...billsDocs(config, {
          operationId: 'listBillServices',
          summary: 'Billers and services, grouped by category or by biller',
          responses: {
            200: {
              description: 'The services, keyed by category (or by biller).',
              schema: billsEnvelopeSchema(
                v.record(v.string(), v.array(BillServiceSchema)),
                'Services keyed by category or biller.',
              ),
            },
          },
        }),
      },
    )
    .get(
      '/services/electricity/billers',
      async () =>
        billsEnvelope(
          (await listElectricityBillers(sql)).map(serializeElectricityBiller),
          'Electricity billers retrieved successfully.',
        ),
      {
        can: 'view',
        ...billsDocs(config, {
          operationId: 'listElectricityBillers',
          summary: 'Electricity billers and their service types',
          responses: {
            200: {
              description: 'The electricity billers.',
              schema: billsEnvelopeSchema(v.array(ElectricityBillerSchema), 'Electricity billers.'),
            },
          },
        }),
      },
    )
    .post(
      '/services/epin/bundles',
      async ({ body: { service_type: provider }, duplicateCheck }) => {
        // A read, but a POST: a Duplicate-Check-Key it carries is claimed only when it succeeds.
        const bundles = await writeOnce(sql, null, duplicateCheck, async (tx) => {
          const found = await listPinBundles(tx, provider);
          if (found.length === 0) {
            const providers = await pinBundleProviders(tx);
            throw fieldErrors({
              service_type: [
                `Select a valid choice. ${provider} is not one of the available choices: ${providers.join(', ')}.`,
              ],
            });
          }
          return found;
        });
        return billsEnvelope(bundles.map(serializePinBundle), 'Pin bundles retrieved successfully.');
      },
      {
        can: 'view',
        headers: requestSchema(BundlesHeaders),
        body: requestSchema(BundlesBody),
        ...billsDocs(config, {
          operationId: 'listPinBundles',
          summary: 'Pin bundles of a provider (Bills-date header required)',
          responses: {
            200: {
              description: "The provider's pin bundles.",
              schema: billsEnvelopeSchema(v.array(PinBundleSchema), 'Pin bundles.'),
            },
          },
          requestExample: { service_type: 'mtn' },
        }),
      },
    );

/** A bill-payment path, also under a version prefix (`/api/v2/bills/...`, answered before the prefix is taken off). */
function isBillsPath(pathname: string): boolean {
  const unprefixed = pathname.replace(/^\/api\/v\d[^/]*(?=\/)/i, '/api');
  return unprefixed === BILLS_PREFIX || unprefixed.startsWith(`${BILLS_PREFIX}/`);
}

/**
 * An error answered on a bill-payment path, in the bill-payment envelope: `message` is the detail
 * (or the first field error), `data` the field errors when there are any. Headers are kept.
 */
export async function inBillsEnvelope(request: Request, response: Response): Promise<Response> {
  if (!isBillsPath(new URL(request.url).pathname)) return response;
  const body = (await response.json()) as Record<string, unknown>;
  const [firstField, firstMessages] = Object.entries(body)[0] ?? [];
  const message =
    typeof body.detail === 'string'
      ? body.detail
      : Array.isArray(firstMessages)
        ? `${firstField}: ${String(firstMessages[0])}`
        : 'Invalid request.';
  const headers = Object.fromEntries(
    [...response.headers.entries()].filter(([name]) => name.toLowerCase() !== 'content-type'),
  );
  return jsonResponse(
    response.status,
    billsEnvelope(typeof body.detail === 'string' ? null : body, message, response.status),
    headers,
  );
}
