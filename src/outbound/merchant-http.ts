/**
 * One outgoing POST to a merchant's URL (a webhook delivery, a verification request), on node:http
 * and node:https (the worker runs on Node): a hard deadline, no redirects followed, at most the
 * first bytes of the answer kept, and, outside sandbox mode, no connection to a loopback or
 * private address, checked on the address actually connected to.
 */
import type { EventId } from '../domain/ids';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { readFileSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { isPublicAddress } from '../formats/network-addresses';
import { withClientSpan } from '../telemetry/trace-context';
import {
  RESPONSE_EXCERPT_BYTES,
  asksToSkipCertificateCheck,
  deliveryHeaders,
  serializeWebhook,
  webhookMessageId,
  type WebhookRow,
} from '../domain/webhooks';
import type { DeliverySecrets } from '../services/webhooks/webhook-secrets';
import { parseVerificationAnswer } from '../domain/collections';

export type TransportSettings = {
  /** Sandbox mode: private and loopback targets allowed, `skip-cert-verify` and the extra CA honoured. */
  sandbox: boolean;
  /**
   * Connections kept open between the POSTs of one process to the same receiver: a webhook's
   * actor sends its deliveries to one target, and a TLS handshake per POST cost the worker more
   * CPU than the rest of a delivery. Absent: a connection per POST.
   */
  agents?: { http: HttpAgent; https: HttpsAgent };
  /** PEM of an extra certificate authority to trust (WEBHOOK_CA_FILE, sandbox only). */
  extraCa: string | undefined;
  timeoutMs: number;
  /** How much of the answer is kept (the attempt log's excerpt, the verification answer). */
  maxResponseBytes?: number;
};

/**
 * Transport settings from configuration: sandbox mode, and the extra certificate authority of
 * WEBHOOK_CA_FILE (sandbox only), read once.
 */
export function outgoingTransport({
  sandbox,
  caFile,
  timeoutMs,
  connectionsPerReceiver = 16,
}: {
  sandbox: boolean;
  caFile: string | undefined;
  timeoutMs: number;
  connectionsPerReceiver?: number;
}): TransportSettings {
  let extraCa: string | undefined;
  if (caFile !== undefined) {
    try {
      extraCa = readFileSync(caFile, 'utf8');
    } catch (cause) {
      throw new Error(`WEBHOOK_CA_FILE ${caFile} cannot be read`, { cause });
    }
  }
  return { sandbox, extraCa, timeoutMs, agents: keepAliveAgents(connectionsPerReceiver) };
}

/**
 * Agents that keep a connection to a receiver open for a moment after a POST, for the next one, at
 * most `connections` to one receiver: the same number the delivery pool keeps in flight to it
 * (`WEBHOOK_RECEIVER_CONCURRENCY`), so a claimed delivery never waits here for a socket.
 * An idle connection closes after 2 s (the agent's `timeout` applies to free sockets only), before
 * a receiver's own keep-alive timeout (Node's 5 s, most proxies' 60 s) could close one under a POST
 * about to be sent on it.
 */
function keepAliveAgents(connections: number): { http: HttpAgent; https: HttpsAgent } {
  const options = {
    keepAlive: true,
    keepAliveMsecs: 1000,
    maxSockets: connections,
    maxFreeSockets: connections,
    timeout: 2000,
    scheduling: 'lifo' as const,
  };
  return { http: new HttpAgent(options), https: new HttpsAgent(options) };
}

export type HttpAttempt = {
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
};

class NotPublicAddressError extends Error {
  readonly code = 'EADDRNOTPUBLIC';
}

function refusal(hostname: string, address: string): NotPublicAddressError {
  const subject = hostname === address ? address : `${hostname} resolves to ${address}, which`;
  return new NotPublicAddressError(
    `${subject} is a loopback or private address; requests go only to public addresses outside sandbox mode`,
  );
}

/**
 * The TLS context that trusts the system's roots and the extra certificate authority, built once
 * per authority: building it parses every root certificate, which per request cost the worker more
 * CPU than anything else it did (a fifth of its busy time under load, in `npm run bench`).
 */
const secureContexts = new Map<string, SecureContext>();
function trustingExtraCa(extraCa: string): SecureContext {
  let context = secureContexts.get(extraCa);
  if (!context) {
    context = createSecureContext({ ca: [...rootCertificates, extraCa] });
    secureContexts.set(extraCa, context);
  }
  return context;
}

/** A DNS lookup that fails when any address of the name is not public (no DNS-rebinding way around it). */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const refused = addresses.find((entry) => !isPublicAddress(entry.address));
    if (refused) return callback(refusal(hostname, refused.address) as NodeJS.ErrnoException, '', 0);
    if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
    const [first] = addresses;
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
    return callback(null, first.address, first.family);
  });
};

/** The text the attempt log keeps for a failed connection: the error code when Node gives one, then the message. */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
}

/**
 * POSTs `body` to `target` (HTTPS, or HTTP where the caller allowed it); never throws for what the receiver does, only
 * reports it.
 */
function postOutgoing(
  target: string,
  headers: Record<string, string>,
  body: string,
  transport: TransportSettings,
): Promise<HttpAttempt> {
  const maxBytes = transport.maxResponseBytes ?? RESPONSE_EXCERPT_BYTES;
  const startedAt = new Date();
  const started = performance.now();
  const url = new URL(target);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const finishWith = (result: Omit<HttpAttempt, 'startedAt' | 'durationMs'>): HttpAttempt => ({
    startedAt,
    durationMs: Math.round(performance.now() - started),
    ...result,
  });
  if (!transport.sandbox && isIP(hostname) !== 0 && !isPublicAddress(hostname)) {
    return Promise.resolve(
      finishWith({ statusCode: null, error: describeError(refusal(hostname, hostname)), responseExcerpt: null }),
    );
  }
  return new Promise((resolve) => {
    let statusCode: number | null = null;
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    // PostgreSQL text cannot hold NUL characters; a binary answer must not make the attempt unloggable.
    const excerpt = (): string | null =>
      statusCode === null
        ? null
        : Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8').replaceAll('\u0000', '');
    // `complete`: the answer was read to its end, so its connection may serve the next POST.
    const settle = (error: string | null, complete = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(finishWith({ statusCode, error: statusCode === null ? error : null, responseExcerpt: excerpt() }));
      if (!complete) outgoing.destroy();
    };
    const plain = url.protocol === 'http:';
    const request = plain ? httpRequest : httpsRequest;
    const outgoing = request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: transport.agents ? (plain ? transport.agents.http : transport.agents.https) : false,
        ...(transport.extraCa ? { secureContext: trustingExtraCa(transport.extraCa) } : {}),
        rejectUnauthorized: !(transport.sandbox && asksToSkipCertificateCheck(url)),
        ...(transport.sandbox ? {} : { lookup: publicOnlyLookup }),
      },
      (response) => {
        statusCode = response.statusCode ?? null;
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          received += chunk.length;
          if (received >= maxBytes) settle(null);
        });
        response.on('end', () => settle(null, true));
        response.on('error', (error) => settle(describeError(error)));
      },
    );
    // The receiver's whole answer has to start within the timeout; a status already received counts.
    const deadline = setTimeout(
      () => settle(`timeout: no response within ${transport.timeoutMs / 1000} s`),
      transport.timeoutMs,
    );
    outgoing.on('error', (error) => settle(describeError(error)));
    outgoing.end(body);
  });
}

/** A webhook delivery's POST (HTTPS; the target was checked when the webhook was saved). */
export const postWebhook = postOutgoing;

/** The verification request (docs/api.md#collections; all strings). */
export type VerificationRequest = {
  phonenumber: string;
  amount: string;
  currency_code: string;
  reference: string;
  remote_transaction_id: string;
};

/** How much of a verification URL's answer is read: `ACCEPT <id>` or `REJECT <id> <reason>` is short. */
const VERIFICATION_ANSWER_BYTES = 2000;

/**
 * Asks a merchant's verification URL about a collection, through the same guarded transport as
 * webhooks (outside sandbox mode no loopback or private address, whatever the URL's name resolves
 * to; no redirects; a hard deadline). The worker's verification and the console's test both send it.
 */
export function postVerification(
  url: string,
  request: VerificationRequest,
  transport: TransportSettings,
): Promise<HttpAttempt> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'text/plain',
    'user-agent': 'collections-verification/1.0',
  };
  return withClientSpan('POST verification', { method: 'POST', url, headers }, () =>
    postOutgoing(url, headers, JSON.stringify(request), { ...transport, maxResponseBytes: VERIFICATION_ANSWER_BYTES }),
  );
}

/** What the merchant decided about a collection, or the organization's default, and why the default applied. */
type MerchantDecision = {
  decision: 'accept' | 'reject';
  reason: string | null;
  decidedBy: 'merchant' | 'default';
  detail: string | null;
};

/**
 * Asks the verification URL (docs/api.md#collections) and reads its answer: `ACCEPT <id>` or `REJECT <id>
 * <reason>` within the transport's deadline; no answer in time, a non-200, an answer naming another
 * transaction or anything unreadable takes the organization's accept-by-default setting. HTTP
 * failures are answers too (the default), never errors.
 */
export async function askMerchant(
  url: string,
  request: VerificationRequest,
  transport: TransportSettings,
  acceptByDefault: boolean,
): Promise<MerchantDecision> {
  const fallback = (detail: string): MerchantDecision => ({
    decision: acceptByDefault ? 'accept' : 'reject',
    reason: null,
    decidedBy: 'default',
    detail,
  });
  const sent = await postVerification(url, request, transport);
  if (sent.statusCode === null) return fallback(`no answer in time: ${sent.error ?? 'unknown'}`);
  if (sent.statusCode !== 200) return fallback(`answered HTTP ${sent.statusCode}`);
  const answer = parseVerificationAnswer(sent.responseExcerpt ?? '', request.remote_transaction_id);
  if (answer.decision === 'none') return fallback(answer.detail);
  return {
    decision: answer.decision,
    reason: answer.decision === 'reject' ? answer.reason : null,
    decidedBy: 'merchant',
    detail: null,
  };
}

/** Signs and POSTs `{"hook", "data"}` of one event to the webhook's target: what the receiver did, never an error. */
export async function postDelivery(
  webhook: WebhookRow,
  event: { id: EventId; data: Record<string, unknown> },
  secrets: DeliverySecrets,
  transport: TransportSettings,
): Promise<HttpAttempt> {
  const body = JSON.stringify({ hook: serializeWebhook(webhook), data: event.data });
  const headers = deliveryHeaders(secrets, webhookMessageId(event.id, webhook.id), Math.floor(Date.now() / 1000), body);
  return await withClientSpan('POST webhook', { method: 'POST', url: webhook.target, headers }, () =>
    postWebhook(webhook.target, headers, body, transport),
  );
}
