/**
 * The networks' availability for merchants (`GET /api/network-status`, docs/api.md#network-status):
 * each network the deployment moves money on or simulates, and whether collections and payouts on
 * it go through its usual route, a fallback, or nowhere now. Read only; the routes behind it
 * (operators, hosts, faults) are the operators' to see.
 */
import { Elysia } from 'elysia';
import * as v from 'valibot';
import { NetworkStatusSchema, serializeNetworkStatus } from '../domain/network-status';
import { listSchemaForVersion } from '../domain/versions';
import { configuredRoutes } from '../network/registry';
import { networkStatus } from '../services/networks/network-status';
import { authPlugin } from '../http/auth';
import type { AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { routeDocs } from '../http/route-docs';

const NoFilters = v.object({});

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  listNetworkStatus: routeDocs({
    operationId: 'listNetworkStatus',
    summary: "Networks' availability",
    description: [
      'Each network this deployment moves money on (a connected operator) or simulates (the sandbox),',
      'in the order of `GET /api/networks`,',
      'with its availability now for collections (`collect`) and payouts (`payout`):',
      '`operational` when its usual route takes traffic,',
      '`degraded` when only a fallback route does (a request still goes through, perhaps slower),',
      '`down` when no route does (a request is refused or waits; try later).',
      "Read from the routes' health of the last seconds; the sandbox is always `operational`.",
    ].join(' '),
    tags: ['Reference'],
    caller: 'merchant',
    responses: {
      200: {
        description: 'The networks with their availability.',
        schema: (version) => listSchemaForVersion(NetworkStatusSchema, version),
      },
    },
  }),
};

export const networkStatusRoutes = ({ sql, config }: AppDeps) => {
  const routes = configuredRoutes(config);
  return new Elysia({ name: 'network-status', prefix: '/api/network-status' }).use(authPlugin(sql)).get(
    '',
    async ({ request, apiVersion }) => {
      const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
      const statuses = await networkStatus(sql, routes, config.sandbox, config.routesScope);
      const results = statuses.slice(page.offset, page.offset + page.limit).map(serializeNetworkStatus);
      return listAnswer(request, config.publicBaseUrl, page, { count: statuses.length, results }, apiVersion);
    },
    { can: 'view', query: listQuery(NoFilters), ...DOCS.listNetworkStatus },
  );
};
