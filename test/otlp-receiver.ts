/**
 * A local OTLP/HTTP trace receiver for tests: `POST /v1/traces` with the JSON export requests the
 * service's exporter sends (src/telemetry/tracing.ts), decoded into a flat list of spans.
 */
export type ReceivedSpan = {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, string | number | boolean>;
};

export type OtlpReceiver = { url: string; spans: () => ReceivedSpan[]; exports: () => number; stop: () => void };

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: KeyValue[];
      }[];
    }[];
  }[];
};

function attributesOf(list: KeyValue[] = []): Record<string, string | number | boolean> {
  const result: Record<string, string | number | boolean> = {};
  for (const { key, value } of list) {
    const plain =
      value.stringValue ??
      value.boolValue ??
      value.doubleValue ??
      (value.intValue === undefined ? undefined : Number(value.intValue));
    if (plain !== undefined) result[key] = plain;
  }
  return result;
}

export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  let exports = 0;
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      if (request.method !== 'POST' || new URL(request.url).pathname !== '/v1/traces')
        return new Response('not found', { status: 404 });
      if (!(request.headers.get('content-type') ?? '').startsWith('application/json'))
        return new Response('JSON only', { status: 415 });
      const body = (await request.json()) as ExportRequest;
      exports += 1;
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              kind: span.kind,
              service,
              attributes: attributesOf(span.attributes),
            });
          }
        }
      }
      return Response.json({});
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans: () => [...spans],
    exports: () => exports,
    stop: () => server.stop(true),
  };
}
