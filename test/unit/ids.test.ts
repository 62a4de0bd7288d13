/**
 * Branded ids (src/domain/ids.ts). The type-level half is checked by the compiler: each line
 * marked `@ts-expect-error` below must be a type error, or `tsc --noEmit` (test/unit/typecheck.test.ts)
 * fails on the unused directive. The run-time half: the one conversion and the path parser.
 */
import { describe, expect, test } from 'bun:test';
import type { Queryable } from '../../src/db';
import { asId, type CollectionRequestId, type OrganizationId, type WalletId } from '../../src/domain/ids';
import { pathId } from '../../src/http/context';
import { ApiError } from '../../src/http/errors';
import { findOwnRequest } from '../../src/services/collections/request-reads';
import { findOwnWallet } from '../../src/services/wallets/wallets';
import type { DeliveryId, EventId, PaymentId, ReversalId, WebhookId } from '../../src/domain/ids';
import { deleteWebhook } from '../../src/services/webhooks/webhooks';
import { finishDelivery } from '../../src/services/webhooks/webhook-deliveries';
import { paymentWorkflowId, reversalWorkflowId, type ReversalInput } from '../../src/contracts/money-out';
import { webhookMessageId } from '../../src/domain/webhooks';

describe('the compiler tells ids apart', () => {
  test('a swapped, plain or other kind of id does not compile', () => {
    // Never called: only compiled.
    const calls = (
      sql: Queryable,
      organizationId: OrganizationId,
      requestId: CollectionRequestId,
      walletId: WalletId,
    ) => [
      findOwnRequest(sql, organizationId, requestId),
      // @ts-expect-error the organization and the request swapped
      findOwnRequest(sql, requestId, organizationId),
      // @ts-expect-error a plain number is no organization id (ids come from rows, paths and asId)
      findOwnRequest(sql, 3, requestId),
      // @ts-expect-error a plain number is no request id
      findOwnRequest(sql, organizationId, 3),
      // @ts-expect-error a wallet's id where a request's is expected
      findOwnRequest(sql, organizationId, walletId),
      // @ts-expect-error a path parsed as a request's id is not a wallet's
      findOwnWallet(sql, organizationId, pathId('5', 'CollectionRequest')),
      findOwnWallet(sql, organizationId, pathId('5', 'Wallet')),
    ];
    const assignments = (organizationId: OrganizationId, requestId: CollectionRequestId) => {
      // @ts-expect-error an organization id is not a request id
      const request: CollectionRequestId = organizationId;
      // An id is still a number wherever a number is asked for (serialisers, SQL parameters).
      const plain: number = requestId;
      return [request, plain];
    };
    expect(calls).toBeFunction();
    expect(assignments).toBeFunction();
  });
});

describe('ids across workflow contracts and services', () => {
  test('a webhook id where a delivery id belongs, and other swaps, do not compile', () => {
    // Never called: only compiled.
    const calls = (
      sql: Queryable,
      webhookId: WebhookId,
      deliveryId: DeliveryId,
      eventId: EventId,
      paymentId: PaymentId,
      reversalId: ReversalId,
    ) => [
      finishDelivery(sql, deliveryId, 'delivered'),
      // @ts-expect-error a webhook's id where a delivery's belongs (a service)
      finishDelivery(sql, webhookId, 'delivered'),
      deleteWebhook(sql, webhookId, 'deleted'),
      // @ts-expect-error a delivery's id where a webhook's belongs (a service)
      deleteWebhook(sql, deliveryId, 'deleted'),
      webhookMessageId(eventId, webhookId),
      // @ts-expect-error the event and the webhook swapped (a delivery's message id)
      webhookMessageId(webhookId, eventId),
      paymentWorkflowId(paymentId),
      // @ts-expect-error a reversal's id where a payment's belongs (a workflow contract)
      paymentWorkflowId(reversalId),
      // @ts-expect-error a plain number is no reversal id (a workflow contract)
      reversalWorkflowId(7),
    ];
    const inputs = (paymentId: PaymentId, reversalId: ReversalId): ReversalInput[] => [
      { reversalId, organizationId: asId('Organization', 1), statusPollSeconds: 10, statusTimeoutSeconds: 60 },
      {
        // @ts-expect-error a workflow's input takes its own kind of id only
        reversalId: paymentId,
        organizationId: asId('Organization', 1),
        statusPollSeconds: 10,
        statusTimeoutSeconds: 60,
      },
    ];
    expect(calls).toBeFunction();
    expect(inputs).toBeFunction();
  });
});

describe('asId', () => {
  test('keeps the number', () => {
    const id: OrganizationId = asId('Organization', 42);
    expect<number>(id).toBe(42);
    expect(JSON.stringify({ organization: id })).toBe('{"organization":42}');
  });

  test.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])(
    'refuses %p: no row has such an id',
    (value) => {
      expect(() => asId('Contact', value)).toThrow(TypeError);
    },
  );
});

describe('pathId', () => {
  test("a positive integer is the route's id", () => {
    expect(pathId('17', 'Payment')).toBe(asId('Payment', 17));
  });

  test.each(['0', '-1', '1.5', 'abc', '', '1e3', '1234567890123456'])('%p names no resource: 404', (raw) => {
    let thrown: unknown;
    try {
      pathId(raw, 'Payment');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect((thrown as ApiError).status).toBe(404);
  });
});
