/**
 * The typed client the end-to-end tests drive the API with: openapi-fetch over the types generated
 * from the OpenAPI document (test/client/api.ts), so a document that misnames a path, a parameter
 * or a field fails to compile; and every response it receives is checked against the document the
 * API serves (test/openapi-contract.ts), so a document that misdescribes a response fails at run time.
 */
import createClient from 'openapi-fetch';
import type { OpenApiDocument } from '../../src/api/openapi';
import { assertDocumented } from '../openapi-contract';
import type { paths } from './api';

export type { components, paths } from './api';

/** Form encoding as the document describes it: nested hashes as `name[key]=value`. */
export function formBody(body: Record<string, unknown>): string {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(body)) {
    if (value === undefined) continue;
    if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) pairs.push([`${name}[${key}]`, String(item)]);
    } else pairs.push([name, String(value)]);
  }
  return new URLSearchParams(pairs).toString();
}
export const FORM = {
  bodySerializer: formBody,
  headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
} as const;

export type ApiClientOptions = { apiKey?: string; authorization?: string; versionPrefix?: `v${number}` };

export function apiClient(baseUrl: string, options: ApiClientOptions = {}) {
  const authorization = options.authorization ?? (options.apiKey ? `Token ${options.apiKey}` : undefined);
  const client = createClient<paths>({ baseUrl, headers: authorization ? { Authorization: authorization } : {} });
  const fetchDocument = async (path: string) => (await (await fetch(`${baseUrl}${path}`)).json()) as OpenApiDocument;
  client.use({
    onRequest({ request }) {
      // `/api/v1/...`: the same operation under a version prefix.
      if (options.versionPrefix)
        return new Request(request.url.replace(`${baseUrl}/api/`, `${baseUrl}/api/${options.versionPrefix}/`), request);
      return undefined;
    },
    async onResponse({ request, response }) {
      const text = await response.clone().text();
      await assertDocumented(
        { method: request.method, url: request.url, status: response.status, headers: response.headers, text },
        fetchDocument,
      );
      return undefined;
    },
  });
  return client;
}
