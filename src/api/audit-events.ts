/** The audit trail over HTTP: `GET /api/audit-events`, the search of services/merchants/audit.ts. */
import { Elysia } from 'elysia';
import { AuditEventSchema, serializeAuditEvent } from '../domain/audit';
import { listSchemaForVersion } from '../domain/versions';
import { AuditFilters, listAuditEvents } from '../services/merchants/audit';
import { authPlugin } from '../http/auth';
import type { AppDeps } from '../http/context';
import { listAnswer, listQuery, parsePage } from '../http/pagination';
import { routeDocs } from '../http/route-docs';

/** Each operation's documentation (the OpenAPI document), by operation id. */
const DOCS = {
  listAuditEvents: routeDocs({
    operationId: 'listAuditEvents',
    summary: 'Search the audit trail',
    description: [
      "Every change a write through the API or the web console made to the organization's objects and settings,",
      'newest first: who (user, API key), through what (channel, client address, method and route), which object,',
      'and its changed fields before and after (secrets as `"[redacted]"`).',
      'Each entry is recorded in the transaction of its write.',
      'Filters combine; the date range is inclusive (UTC).',
    ].join(' '),
    tags: ['Audit trail'],
    caller: 'merchant',
    responses: {
      200: {
        description: 'A page of audit entries.',
        schema: (version) => listSchemaForVersion(AuditEventSchema, version),
      },
    },
  }),
};

export const auditEventRoutes = ({ sql, config }: AppDeps) =>
  new Elysia({ name: 'audit-events', prefix: '/api/audit-events' }).use(authPlugin(sql)).get(
    '',
    async ({ request, query: filters, principal, apiVersion }) => {
      const page = parsePage(new URL(request.url).searchParams, config.pageSizeMax);
      const { count, rows } = await listAuditEvents(sql, principal.organizationId, filters, page);
      return listAnswer(
        request,
        config.publicBaseUrl,
        page,
        { count, results: rows.map(serializeAuditEvent) },
        apiVersion,
      );
    },
    { can: 'audit', query: listQuery(AuditFilters), ...DOCS.listAuditEvents },
  );
