// `npm run openapi:types`: regenerates the typed client's types (test/client/api.ts) from the
// OpenAPI document the app builds from its routes. No database or Temporal server is contacted.
import { Client, Connection } from '@temporalio/client';
import { createApp } from '../src/app';
import type { OpenApiDocument } from '../src/api/openapi';
import { loadConfig } from '../src/config';
import { createSql } from '../src/db';
import { launcherFromConfig } from '../src/temporal/launcher';
import { CLIENT_TYPES_FILE, clientTypesSource } from '../test/client/generate';

const config = loadConfig(process.env);
const sql = createSql(config.databaseUrl, 1);
const temporal = new Client({ connection: Connection.lazy() });
const app = createApp({ config, sql, temporal, launcher: launcherFromConfig(temporal, config, () => {}) });
const document = (await (await app.handle(new Request('http://localhost/openapi/json'))).json()) as OpenApiDocument;
await Bun.write(CLIENT_TYPES_FILE, await clientTypesSource(document));
await sql.end();
process.stdout.write(`wrote ${CLIENT_TYPES_FILE}\n`);
