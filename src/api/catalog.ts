/** What the service handles: currencies (`/api/currencies`) and mobile networks (`/api/networks`), read only. */
import { Elysia } from 'elysia';
import { CurrencySchema, NetworkSchema, serializeCurrency, serializeNetwork } from '../domain/money-out';
import { listCurrencies } from '../services/platform/catalog';
import { networkStatus } from '../services/networks/network-status';
import { configuredRoutes } from '../network/registry';
import { listedCodes, SUPPORTED_CURRENCIES } from '../domain/money';
import { SANDBOX_NETWORK, currenciesOfNetwork, knownNetworks } from '../domain/networks';
import { listForVersion, listSchemaForVersion } from '../domain/versions';
import { authPlugin } from '../http/auth';
import { parseId, type AppDeps } from '../http/context';
import { notFound } from '../http/errors';
import { listQuery, pagedList, parsePage } from '../http/pagination';
import { PathIdParams, routeDocs } from '../http/route-docs';
import * as v from 'valibot';

const NoFilters = v.object({});

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  listCurrencies: routeDocs({
    operationId: 'listCurrencies',
    summary: 'List currencies',
    description: [
      `${listedCodes(SUPPORTED_CURRENCIES)}: BXC is the sandbox currency;`,
      '`minor_units` is how many decimals an amount in each may have.',
    ].join(' '),
    tags: ['Reference'],
    caller: 'merchant',
    responses: {
      200: { description: 'The currencies.', schema: (version) => listSchemaForVersion(CurrencySchema, version) },
    },
  }),
  listNetworks: routeDocs({
    operationId: 'listNetworks',
    summary: 'List mobile networks',
    description: [
      'The networks the service knows from the prefixes of their numbers:',
      'their country, currencies, and what they support.',
    ].join(' '),
    tags: ['Reference'],
    caller: 'merchant',
    responses: {
      200: { description: 'The networks.', schema: (version) => listSchemaForVersion(NetworkSchema, version) },
    },
  }),
  getNetwork: routeDocs({
    operationId: 'getNetwork',
    summary: 'Get a mobile network',
    description: 'One network by its stable id.',
    tags: ['Reference'],
    caller: 'merchant',
    errors: [404],
    responses: { 200: { description: 'The network.', schema: NetworkSchema } },
  }),
};

export const catalogRoutes = ({ sql, config }: AppDeps) => {
  const routes = configuredRoutes(config);
  /** Each network's availability now, by id (the routes' health, as `GET /api/network-status` reads it). */
  const availabilityNow = async () => {
    const statuses = new Map(
      (await networkStatus(sql, routes, config.sandbox, config.routesScope)).map((status) => [
        status.network.id,
        status,
      ]),
    );
    return (id: number) => {
      const status = statuses.get(id);
      return status ? { collect: status.collect, payout: status.payout } : null;
    };
  };
  // Outside sandbox mode the sandbox network serves nobody.
  const servedNetworks = () => knownNetworks().filter((network) => config.sandbox || network.id !== SANDBOX_NETWORK.id);
  return new Elysia({ name: 'catalog', prefix: '/api' })
    .use(authPlugin(sql))
    .get(
      '/currencies',
      async ({ request, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const rows = await listCurrencies(sql);
        const results = rows.slice(page.offset, page.offset + page.limit).map(serializeCurrency);
        return listForVersion(pagedList(request, config.publicBaseUrl, page, rows.length, results), apiVersion);
      },
      {
        can: 'view',
        query: listQuery(NoFilters),
        ...DOCS.listCurrencies,
      },
    )
    .get(
      '/networks',
      async ({ request, apiVersion }) => {
        const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
        const networks = servedNetworks();
        const availability = await availabilityNow();
        const results = networks
          .slice(page.offset, page.offset + page.limit)
          .map((network) => serializeNetwork(network, currenciesOfNetwork(network), availability(network.id)));
        return listForVersion(pagedList(request, config.publicBaseUrl, page, networks.length, results), apiVersion);
      },
      {
        can: 'view',
        query: listQuery(NoFilters),
        ...DOCS.listNetworks,
      },
    )
    .get(
      '/networks/:id',
      async ({ params }) => {
        const id = parseId(params.id);
        const network = servedNetworks().find((candidate) => candidate.id === id);
        if (network === undefined) throw notFound();
        return serializeNetwork(network, currenciesOfNetwork(network), (await availabilityNow())(network.id));
      },
      {
        can: 'view',
        params: PathIdParams,
        ...DOCS.getNetwork,
      },
    );
};
