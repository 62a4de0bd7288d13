/**
 * Bill-payment listing endpoints (api.md 4.7) under `{bills_url}/api/bills/`. The same API keys
 * authorize them (`Token` or `Bearer`), and throttling, versions and duplicate checks apply as on
 * every authenticated route; every answer, errors included, is the envelope of api.md 2.8.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import {
  SERVICE_GROUPINGS, billsEnvelope, groupBillServices, parseRfcDate, serializeBillService, serializeElectricityBiller,
  serializePinBundle,
} from '../domain/bills';
import { listBillServices, listElectricityBillers, listPinBundles, pinBundleProviders } from '../services/bills';
import { writeOnce } from '../services/duplicate-checks';
import { authPlugin } from './auth';
import type { AppDeps } from './context';
import { ApiError, fieldErrors } from './errors';
import { REQUIRED, text, validate } from './fields';
import { queryObject } from './filters';
import { jsonResponse, parseRequestBody } from './http';

export const BILLS_PREFIX = '/api/bills';
export const BILLS_DATE_HEADER = 'Bills-date';

const choice = (issue: v.BaseIssue<unknown>) => `Select a valid choice. ${String(issue.input)} is not one of the available choices.`;
const ServicesQuery = v.object({ groupby: v.optional(v.picklist(SERVICE_GROUPINGS, choice), 'category') });
const BundlesBody = v.object({ service_type: v.pipe(text(40), v.toLowerCase()) }, REQUIRED);

function requireBillsDate(request: Request): Date {
  const header = request.headers.get(BILLS_DATE_HEADER);
  if (header === null || header.trim() === '') throw new ApiError(400, { detail: `The ${BILLS_DATE_HEADER} header is required.` });
  const date = parseRfcDate(header);
  if (date === null) {
    throw new ApiError(400, { detail: `The ${BILLS_DATE_HEADER} header must be a date in RFC 7231 or RFC 2822 format, such as "Tue, 15 Nov 1994 08:12:31 GMT".` });
  }
  return date;
}

/** OpenAPI details of a bill-payment route: its tag and, when configured, `{bills_url}` as its server. */
const billsDetail = (config: AppDeps['config'], summary: string) => ({
  detail: {
    tags: ['Bill payments'],
    summary,
    ...(config.billsBaseUrl ? { servers: [{ url: config.billsBaseUrl }] } : {}),
  },
});

export const billRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'bills', prefix: BILLS_PREFIX })
    .use(authPlugin(sql))
    .get(
      '/billers/services/list',
      async ({ request }) => {
        const { groupby } = validate(ServicesQuery, queryObject(new URL(request.url).searchParams));
        const services = (await listBillServices(sql)).map(serializeBillService);
        return billsEnvelope(groupBillServices(services, groupby), 'Billers and services retrieved successfully.');
      },
      { auth: true, ...billsDetail(config, 'Billers and services, grouped by category or by biller') },
    )
    .get(
      '/services/electricity/billers',
      async () => billsEnvelope((await listElectricityBillers(sql)).map(serializeElectricityBiller), 'Electricity billers retrieved successfully.'),
      { auth: true, ...billsDetail(config, 'Electricity billers and their service types') },
    )
    .post(
      '/services/epin/bundles',
      async ({ request, duplicateCheck }) => {
        const body = await parseRequestBody(request);
        requireBillsDate(request);
        const { service_type: provider } = validate(BundlesBody, body);
        // A read, but a POST: a Duplicate-Check-Key it carries is claimed only when it succeeds.
        const bundles = await writeOnce(sql, duplicateCheck, async (tx) => {
          const found = await listPinBundles(tx, provider);
          if (found.length === 0) {
            const providers = await pinBundleProviders(tx);
            throw fieldErrors({ service_type: [`Select a valid choice. ${provider} is not one of the available choices: ${providers.join(', ')}.`] });
          }
          return found;
        });
        return billsEnvelope(bundles.map(serializePinBundle), 'Pin bundles retrieved successfully.');
      },
      { auth: true, parse: 'none', ...billsDetail(config, 'Pin bundles of a provider (Bills-date header required)') },
    );

export const isBillsPath = (pathname: string): boolean => pathname === BILLS_PREFIX || pathname.startsWith(`${BILLS_PREFIX}/`);

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
      : Array.isArray(firstMessages) ? `${firstField}: ${String(firstMessages[0])}` : 'Invalid request.';
  const headers = Object.fromEntries([...response.headers.entries()].filter(([name]) => name.toLowerCase() !== 'content-type'));
  return jsonResponse(response.status, billsEnvelope(typeof body.detail === 'string' ? null : body, message, response.status), headers);
}
