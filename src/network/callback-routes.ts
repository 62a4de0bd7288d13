/**
 * What an operator's callback routes are (`CallbackRoute`, declared in each connector's folder,
 * ./<operator>/callbacks.ts) and what the API hands them (`CallbackContext`): the core's records, the
 * configuration, and what a callback may do. The API mounts them (src/api/operator-callbacks.ts).
 */
import type * as v from 'valibot';
import type { IncomingPaymentInput } from '../contracts/incoming-collection';
import type { CollectionRequestId, OrganizationId } from '../domain/ids';
import type { NetworkRecords } from '../services/networks/records';

/**
 * One operation a network stands in `network_operations` (services/networks/operations.ts) for a callback to
 * wake.
 */
export type WakeTarget = {
  id: number;
  network: string;
  kind: string;
  reference: string;
  subject: string;
  workflowId: string;
};

/**
 * What the API hands a connector's callback routes: the core's records, the configuration, and the two
 * things a callback may do: wake the workflow of one of our operations (keeping what was said as a
 * hint, or as a status query's result), or start the confirmation of a payment nobody asked for.
 */
export type CallbackContext<Settings> = {
  /** The core's records: which operation of ours an operator's reference names (never the database). */
  records: NetworkRecords;
  /** The connector's settings, or null when it is off (its routes then find nothing of ours). */
  settings: Settings | null;
  sandbox: boolean;
  /**
   * PUBLIC_BASE_URL: where the operator calls back (behind a proxy, the request's own URL is not what the operator
   * signed).
   */
  publicBaseUrl: string | undefined;
  wake(operation: WakeTarget, said: unknown, asResult?: boolean): Promise<void>;
  reportForConfirmation(payment: IncomingPaymentInput): Promise<void>;
  /**
   * What a paybill payment's report is matched with (Daraja's validation and confirmation): the application's own
   * records.
   */
  merchants: {
    /** The request a paybill account number (`<organization>-<request>`) names, on `network` in `currency`. */
    requestOfBillReference(reference: string, network: string, currency: string): Promise<BilledRequest | undefined>;
    /** An organization's verification URL and its default, or none. */
    verificationSettingsOf(
      organizationId: OrganizationId,
    ): Promise<{ url: string | null; acceptByDefault: boolean } | undefined>;
  };
  /** The merchant's verification URL, asked within `timeoutMs` (Daraja's paybill validation). */
  askVerification(
    url: string,
    question: VerificationQuestion,
    acceptByDefault: boolean,
    timeoutMs: number,
  ): Promise<{ decision: 'accept' | 'reject'; decidedBy: string; detail?: string | null }>;
};

/** A collection request a paybill account number names. */
type BilledRequest = { id: CollectionRequestId; organizationId: OrganizationId; phoneNumber: string; amount: string };

/** What a merchant's verification URL is asked about an incoming payment (docs/api.md#collections). */
type VerificationQuestion = {
  phonenumber: string;
  amount: string;
  currency_code: string;
  reference: string;
  remote_transaction_id: string;
};

/**
 * Documentation of one callback route, which the API records for the OpenAPI document
 * (src/http/route-docs.ts): anyone may call it; `responses` by status, with their schema.
 */
export type CallbackDocs = {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  caller: 'anyone';
  errors: readonly (400 | 403 | 404 | 429 | 503)[];
  responses: Record<number, { description: string; schema: v.GenericSchema }>;
  requestExample?: Record<string, unknown>;
};

/**
 * A callback a route refuses (a signature that does not verify): answered with `status` and the API's error body,
 * waking nothing.
 */
export class CallbackRefusal extends Error {
  constructor(
    readonly status: 403 | 503,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/**
 * One path an operator calls back, declared with its connector and mounted by the API
 * (src/api/operator-callbacks.ts): its schemas (a body that breaks `body` is refused with the API's
 * 400, or handed over unread when `checked`), its documentation, and what it does. It answers in the
 * operator's expected shape; throwing a CallbackRefusal answers that refusal.
 */
export type CallbackRoute<Settings> = {
  method: 'POST' | 'PUT';
  path: string;
  params?: v.GenericSchema;
  body: v.GenericSchema;
  /**
   * The body reaches `handle` as `{valid, body | errors}` (a request the operator wants a decision on, never a 400).
   */
  checked?: boolean;
  /** A body that cannot be read at all is handed over as invalid too (src/http/request.ts). */
  answersUnreadable?: boolean;
  /** The body's bytes reach `handle` as they arrived (`rawBody`), for a signature over them. */
  keepsRawBody?: boolean;
  docs: CallbackDocs;
  /** Sees the body as it arrived, before validation rebuilds it (a signature over its bytes). */
  received?(body: unknown, request: Request): void;
  handle(
    // biome-ignore lint/suspicious/noExplicitAny: the body is what the route's own schema checked
    input: { body: any; params: Record<string, string>; request: Request; rawBody: Uint8Array },
    context: CallbackContext<Settings>,
  ): Promise<unknown>;
};
