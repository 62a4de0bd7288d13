/**
 * Traces end to end: the app (tracing on, exporting to a local OTLP receiver) takes a collection
 * request whose caller sent a `traceparent`; the real worker process (tracing on, same receiver)
 * runs its workflows and activities. One trace holds the API's request span, its PostgreSQL
 * queries and workflow start, the workflow's spans and the activities' spans; the webhook the
 * request causes carries the trace to its receiver, and the worker's log lines name it.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import { createApp } from '../../src/app';
import { logger } from '../../src/log';
import { startApiTelemetry, type ApiTelemetry } from '../../src/telemetry/api';
import { TRACER_NAME } from '../../src/telemetry/trace-context';
import { connectClient } from '../../src/temporal/connection';
import { launcherFromConfig } from '../../src/temporal/launcher';
import { collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import {
  createMerchant,
  eventually,
  startWorker,
  testConfig,
  testSql,
  uniqueNumber,
  uniqueTaskQueue,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../otlp-receiver';
import { makeCertificate, startReceiver, type Receiver } from '../webhook-receiver';

const taskQueue = uniqueTaskQueue('tracing');
let otlp: OtlpReceiver;
let hooks: Receiver;
let worker: WorkerProcess;
let telemetry: ApiTelemetry;
let client: Client;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  otlp = startOtlpReceiver();
  const certificate = makeCertificate();
  hooks = await startReceiver(certificate);
  worker = await startWorker(taskQueue, {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_SERVICE_NAME: 'test-worker',
    // The batch processor's standard setting: export within 200 ms instead of 5 s.
    OTEL_BSP_SCHEDULE_DELAY: '200',
    SANDBOX_PAYMENT_DELAY_SECONDS: '1',
    WEBHOOK_CA_FILE: certificate.certFile,
  });
  const config = testConfig({
    TASK_QUEUE: taskQueue,
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_SERVICE_NAME: 'test-api',
  });
  // Tracing for this test process, as src/server.ts sets it up for the API process.
  telemetry = startApiTelemetry(config.telemetry, testSql());
  client = await connectClient(config.temporal, telemetry.clientInterceptors);
  app = createApp({ config, sql: testSql(), temporal: client, launcher: launcherFromConfig(client, config, () => {}) });
});

afterAll(async () => {
  // Unregisters the provider and the PostgreSQL wrapper: later test files run untraced.
  await telemetry?.shutdown();
  await client?.connection.close();
  await worker?.stop();
  await hooks?.close();
  otlp?.stop();
});

/** OTLP's numbering of span kinds (SPAN_KIND_SERVER), which the JSON export uses. */
const OTLP_SPAN_KIND_SERVER = 2;
const randomHex = (bytes: number) => randomBytes(bytes).toString('hex');
const inTrace = (traceId: string) => otlp.spans().filter((span) => span.traceId === traceId);
const named = (spans: ReceivedSpan[], name: string) => spans.filter((span) => span.name === name);

function only(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = named(spans, name);
  expect({ name, count: found.length }).toEqual({ name, count: 1 });
  return found[0]!;
}

async function requestCollection(merchant: TestMerchant, traceparent: string): Promise<number> {
  const response = await merchant.request('/api/collectionrequests', {
    form: {
      phonenumber: uniqueNumber('+256772'),
      amount: '125',
      currency: 'BXC',
      send_instructions: 'true',
      expiry_date: '1 minute',
      first_name: 'Trace',
      last_name: 'Payer',
    },
    headers: { traceparent },
  });
  expect(response.status).toBe(201);
  return response.body.id;
}

describe('tracing', () => {
  test("one trace from the API request (with the caller's traceparent) through the workflows to each activity", async () => {
    const merchant = await createMerchant(app);
    const hookPath = '/hooks/traced';
    const hook = await merchant.request('/api/webhooks', {
      form: { event: 'collectionrequest.status.changed', target: hooks.url(hookPath) },
    });
    expect(hook.status).toBe(201);

    const traceId = randomHex(16);
    const callerSpanId = randomHex(8);
    const requestId = await requestCollection(merchant, `00-${traceId}-${callerSpanId}-01`);
    expect(
      await client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', requestId))).result(),
    ).toMatchObject({ status: 'successful' });
    await telemetry.tracing!.forceFlush();

    // The API's side: the request span continues the caller's trace; its queries and the workflow start are its children.
    const api = await eventually('the API spans', async () => {
      const spans = inTrace(traceId).filter((span) => span.service === 'test-api');
      return named(spans, 'POST /api/collectionrequests').length === 1 ? spans : undefined;
    });
    const requestSpan = only(api, 'POST /api/collectionrequests');
    expect(requestSpan).toMatchObject({ parentSpanId: callerSpanId, kind: OTLP_SPAN_KIND_SERVER });
    expect(requestSpan.attributes).toMatchObject({
      'http.method': 'POST',
      'http.route': '/api/collectionrequests',
      'http.status_code': 201,
      'organization.id': merchant.organization.id,
    });
    const queries = api.filter(
      (span) => span.attributes['db.system'] === 'postgresql' && span.parentSpanId === requestSpan.spanId,
    );
    expect(
      queries.some((span) => /insert into collection_requests/i.test(String(span.attributes['db.statement']))),
    ).toBe(true);
    expect(queries.every((span) => !/\$\d/.test(span.name))).toBe(true);
    const start = only(api, 'StartWorkflow:collectionRequest');
    expect(start.parentSpanId).toBe(requestSpan.spanId);

    // The worker's side: the workflow run is a child of that start, each activity of its scheduling in the workflow.
    // A workflow's spans reach the exporter when its activation ends, an activity's when it ends: wait for both sides.
    const worked = await eventually(
      'the worker spans of the request workflow',
      async () => {
        const spans = inTrace(traceId).filter((span) => span.service === 'test-worker');
        const ids = new Set(spans.map((span) => span.spanId));
        const run = named(spans, 'RunWorkflow:collectionRequest');
        const activities = spans.filter((span) => span.name.startsWith('RunActivity:'));
        const allScheduled = activities.every((activity) => ids.has(activity.parentSpanId ?? ''));
        return run.length === 1 && activities.length >= 2 && allScheduled ? spans : undefined;
      },
      30_000,
    );
    const run = only(worked, 'RunWorkflow:collectionRequest');
    expect(run.parentSpanId).toBe(start.spanId);
    const byId = new Map(worked.map((span) => [span.spanId, span]));
    const activityRuns = worked.filter((span) => span.name.startsWith('RunActivity:'));
    for (const activity of activityRuns) {
      const scheduled = byId.get(activity.parentSpanId ?? '');
      expect({ activity: activity.name, parent: scheduled?.name }).toEqual({
        activity: activity.name,
        parent: activity.name.replace('RunActivity:', 'StartActivity:'),
      });
    }
    // The request's own activities are children of its workflow run.
    const requestActivities = worked.filter(
      (span) => span.name.startsWith('StartActivity:') && span.parentSpanId === run.spanId,
    );
    expect(requestActivities.length).toBeGreaterThanOrEqual(1);
    // The rest of the lifecycle joins the same trace: the sandbox's payment, received by the request's own workflow.
    await eventually(
      "the payment's receipt in the trace",
      async () => named(inTrace(traceId), 'RunActivity:receiveCollection').length === 1 || undefined,
      30_000,
    );
    expect(worked.some((span) => span.attributes['db.system'] === 'postgresql')).toBe(true);

    // The webhook it causes: a client span in the trace, and the trace goes with the POST.
    const delivered = await eventually('a traced webhook delivery', async () => {
      const received = hooks
        .requests(hookPath)
        .filter((request) => request.headers.traceparent?.split('-')[1] === traceId);
      return received.length > 0 ? received : undefined;
    });
    expect(delivered[0]!.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await eventually(
      'the webhook client span',
      async () => named(inTrace(traceId), 'POST webhook').length > 0 || undefined,
      10_000,
    );

    // The worker's JSON log lines of that trace name it.
    const attemptLine = await eventually('a worker log line of the trace', async () =>
      worker
        .output()
        .split('\n')
        .find((line) => line.includes('"message":"webhook attempt"') && line.includes(`"trace_id":"${traceId}"`)),
    );
    expect(JSON.parse(attemptLine)).toMatchObject({
      level: 'info',
      trace_id: traceId,
      span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
  }, 90_000);

  test('a request without traceparent starts its own trace; log lines inside a span carry its ids', async () => {
    const merchant = await createMerchant(app);
    const response = await merchant.request('/api/contacts?limit=1');
    expect(response.status).toBe(200);
    await telemetry.tracing!.forceFlush();
    const span = await eventually('the request span', async () =>
      otlp
        .spans()
        .find(
          (candidate) =>
            candidate.name === 'GET /api/contacts' &&
            candidate.attributes['organization.id'] === merchant.organization.id,
        ),
    );
    expect(span.parentSpanId).toBeUndefined();
    expect(span.attributes['http.status_code']).toBe(200);

    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    let ids: { traceId: string; spanId: string } | undefined;
    try {
      trace.getTracer(TRACER_NAME).startActiveSpan('log check', (active) => {
        ids = active.spanContext();
        logger.info('inside a span');
        active.end();
      });
      logger.info('outside any span');
    } finally {
      process.stderr.write = write;
    }
    const [inside, outside] = lines.map((line) => JSON.parse(line));
    expect(inside).toMatchObject({ message: 'inside a span', trace_id: ids!.traceId, span_id: ids!.spanId });
    expect(outside.message).toBe('outside any span');
    expect(outside.trace_id).toBeUndefined();
  });
});
