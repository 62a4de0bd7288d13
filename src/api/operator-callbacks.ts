/**
 * The fixed paths the real operators call back, mounted from the connectors' own declarations
 * (src/network/<operator>/callbacks.ts, listed by src/network/registry.ts). Their callbacks carry
 * no credentials a route could trust with money, so none is believed: a callback finds the
 * operation it names (the core's records, services/networks/records.ts), keeps what it said, and
 * wakes the workflow that waits on it; that workflow then asks the operator's own status query,
 * which alone moves money.
 * Every route answers fast, in the operator's expected shape when it could read the callback, takes
 * repeats without effect, ignores (and logs) references it does not know, and never answers 500.
 *
 * What arrives is judged before anything reads it: each body's schema describes what the operator
 * sends; a body that breaks it is refused with the API's 400 and wakes nothing, unless the route
 * wants a decision on it (`checked`). A body no operator sends at all (not a JSON object, too large
 * or too deep) is refused before the route runs, unless the route answers unreadable bodies too.
 *
 * Every request to these paths is counted, before its body is read, against its source address
 * and, when the address is within its limit, against its operator (OPERATOR_CALLBACK_LIMIT_*, per
 * minute): past either limit it is 429 with Retry-After, and nothing is looked up, woken or asked.
 */
import { Elysia } from 'elysia';
import { askMerchant, outgoingTransport, type TransportSettings } from '../outbound/merchant-http';
import { logger } from '../log';
import { CallbackRefusal, type CallbackContext, type CallbackRoute, type WakeTarget } from '../network/callback-routes';
import { callbackUnits } from '../network/registry';
import { requestOfBillReference } from '../services/collections/collection-matching';
import { verificationSettingsOf } from '../services/collections/collection-receiving';
import { recordHint, recordResult } from '../services/networks/journal';
import { createNetworkRecords } from '../services/networks/records';
import { clientAddress, throttledAddress } from '../http/client-address';
import type { AppDeps } from '../http/context';
import { ApiError } from '../http/errors';
import { throttled } from '../http/request-policy';
import { MAX_BODY_BYTES, declareBodyOptions, rawBodyOf } from '../http/request';
import { admitOperatorCallback } from '../services/platform/throttling';
import { countThrottledCallback } from '../telemetry/metrics';
import type { IncomingPaymentInput } from '../contracts/incoming-collection';
import { checkedRequestSchema, requestSchema, routeDocs } from '../http/route-docs';

export const operatorCallbackRoutes = (deps: AppDeps) => {
  const { sql, config, launcher } = deps;
  const units = callbackUnits(config);
  const transports = new Map<number, TransportSettings>();
  const records = createNetworkRecords(sql);

  /**
   * Keeps what an operator said about one of our operations and wakes its workflow; failures are logged, never
   * answered.
   */
  async function wake(operation: WakeTarget, said: unknown, asResult = false): Promise<void> {
    try {
      if (asResult) await recordResult(sql, operation.id, said);
      else await recordHint(sql, operation.id, said);
      await launcher.signalNetworkHint(operation.workflowId, {
        reference: operation.kind === 'status_query' ? operation.subject : operation.reference,
      });
    } catch (error) {
      // The workflow asks the operator at its next poll anyway.
      logger.warn('operator callback not passed on; the next poll asks the operator', {
        network: operation.network,
        reference: operation.reference,
        error,
      });
    }
  }

  /**
   * Starts the workflow that confirms a reported payment with the operator, then stores and credits
   * it. Temporal out of reach is a 503 (try again), never a 500: the payment is not recorded yet.
   */
  async function reportForConfirmation(payment: IncomingPaymentInput): Promise<void> {
    try {
      await launcher.startIncomingCollection(payment, { confirm: true });
    } catch (cause) {
      logger.error('reported payment not taken: Temporal out of reach', {
        network: payment.network,
        remoteTransactionId: payment.remoteTransactionId,
        error: cause,
      });
      throw new ApiError(
        503,
        { detail: 'The service is temporarily unavailable. Try again shortly.' },
        { 'Retry-After': '5' },
        { cause },
      );
    }
  }

  const merchants: CallbackContext<unknown>['merchants'] = {
    requestOfBillReference: (reference, network, currency) => requestOfBillReference(sql, reference, network, currency),
    verificationSettingsOf: (organizationId) => verificationSettingsOf(sql, organizationId),
  };
  // biome-ignore lint/suspicious/noExplicitAny: each connector's settings type is its own
  const context = (settings: unknown): CallbackContext<any> => ({
    records,
    settings,
    sandbox: config.sandbox,
    publicBaseUrl: config.publicBaseUrl,
    wake,
    reportForConfirmation,
    merchants,
    askVerification: async (url, question, acceptByDefault, timeoutMs) => {
      let transport = transports.get(timeoutMs);
      if (!transport)
        transports.set(
          timeoutMs,
          (transport = outgoingTransport({ sandbox: config.sandbox, caFile: config.webhooks.caFile, timeoutMs })),
        );
      return await askMerchant(url, question, transport, acceptByDefault);
    },
  });

  /** The unit whose callback path a request is on (with or without a trailing slash, any method). */
  const unitOf = (request: Request) => {
    const path = new URL(request.url).pathname.replace(/\/+$/, '');
    return units.find(({ unit }) => unit.callbacks.owns(path));
  };

  let app = new Elysia({ name: 'operator-callbacks' })
    // Before the body is read and before anything is looked up: past a limit a request costs one counter row.
    .onRequest(async ({ request, server }) => {
      const owner = unitOf(request);
      if (!owner) return;
      const address = throttledAddress(clientAddress(request, server, config.console.trustProxy) ?? 'unknown');
      const admission = await admitOperatorCallback(sql, {
        address,
        operator: owner.unit.callbacks.account(owner.settings),
        limits: config.operatorCallbacks,
      });
      if (admission.admitted) return;
      countThrottledCallback(owner.unit.callbacks.metricName, admission.limit);
      throw throttled(admission.retryAfterSeconds);
    });
  for (const { unit, settings } of units) {
    for (const route of unit.callbacks.routes) app = mount(app, route, context(settings));
  }
  return app;
};

/** One declared route on the app: its schemas, its documentation, and its handler with the connector's context. */
function mount(
  // biome-ignore lint/suspicious/noExplicitAny: Elysia's app type carries seven generics a plugin does not constrain
  app: Elysia<any, any, any, any, any, any, any>,
  // biome-ignore lint/suspicious/noExplicitAny: each connector's settings type is its own
  route: CallbackRoute<any>,
  // biome-ignore lint/suspicious/noExplicitAny: each connector's settings type is its own
  context: CallbackContext<any>,
) {
  if (route.answersUnreadable || route.keepsRawBody) {
    declareBodyOptions(route.method, route.path, {
      limit: MAX_BODY_BYTES,
      answersUnreadable: route.answersUnreadable,
      keepsRawBody: route.keepsRawBody,
    });
  }
  const options = {
    body: route.checked ? checkedRequestSchema(route.body) : requestSchema(route.body),
    ...(route.params ? { params: requestSchema(route.params) } : {}),
    // biome-ignore lint/suspicious/noExplicitAny: Elysia's transform context type depends on the route's own schema
    ...(route.received ? { transform: ({ body, request }: any) => route.received!(body, request) } : {}),
    ...routeDocs(route.docs),
  };
  // biome-ignore lint/suspicious/noExplicitAny: Elysia's handler context type depends on the route's own schema
  const handler = async ({ body, params, request }: any) => {
    try {
      return await route.handle({ body, params, request, rawBody: rawBodyOf(request) }, context);
    } catch (error) {
      if (!(error instanceof CallbackRefusal)) throw error;
      throw new ApiError(
        error.status,
        { detail: error.message },
        error.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(error.retryAfterSeconds) },
      );
    }
  };
  // The options are built per route; Elysia infers its types from literal ones only.
  return route.method === 'PUT'
    ? // biome-ignore lint/suspicious/noExplicitAny: see above
      app.put(route.path, handler, options as any)
    : // biome-ignore lint/suspicious/noExplicitAny: see above
      app.post(route.path, handler, options as any);
}
