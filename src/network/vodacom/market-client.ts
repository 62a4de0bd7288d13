/**
 * A market's calls to the M-Pesa OpenAPI (`<root>/ipg/v2/<context>/...`): its sessions, each first used after its
 * activation delay with a spare always ready (src/network/session-pool.ts), and its bearers encrypted under the
 * portal's public key. The connector (./client.ts) makes each call through its market's client.
 */
import { constants, publicEncrypt, type KeyObject } from 'node:crypto';
import { accepted } from './protocol';
import type { VodacomMarket, VodacomSettings } from './settings';
import { logger } from '../../log';
import { callOperator, field, operatorTimeoutMs, type OperatorAnswer } from '../operator-http';
import { createSessionPool, type IssuedSession } from '../session-pool';

/**
 * The most a whole call takes, sessions refused and waited for included: within the activity that
 * makes it (src/workflows/payment.ts and the prompt's status query: 30 s), so that no call goes on
 * after its activity timed out and was tried again (the two would reach M-Pesa, the second as INS-10).
 */
const CALL_DEADLINE_MS = 25_000;
/**
 * A call is sent only with this long left before its deadline (its answer's time); a session active later comes too
 * late for it.
 */
const LEAST_ANSWER_MS = 2_000;
/** The most a new session takes to become active, as M-Pesa documents it ("up to 30 seconds"). */
const DOCUMENTED_ACTIVATION_MS = 30_000;
/** How soon a session request that failed is asked again, while a session still serves. */
const SESSION_RETRY_MS = 5_000;
/**
 * Codes M-Pesa answers with HTTP 401 about the transaction itself (not the session): the documentation maps them so.
 */
const TRANSACTION_401_CODES: ReadonlySet<string> = new Set(['INS-4', 'INS-5', 'INS-6']);

/**
 * A call: `timeoutMs` how long its answer is waited for, `deadlineMs` how long the whole call may take (sessions
 * included).
 */
export type Request = {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  json?: Record<string, string>;
  query?: Record<string, string>;
  timeoutMs?: number;
  deadlineMs?: number;
};

/**
 * A market's calls: its sessions (a spare always ready, each first used after its activation delay) and its encrypted
 * bearers.
 */
export function createMarketClient(settings: VodacomSettings, market: VodacomMarket, key: KeyObject) {
  const root = `${settings.baseUrl}/ipg/v2/${market.context}`;
  const encrypt = (text: string) =>
    publicEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(text)).toString('base64');
  async function newSession(): Promise<IssuedSession> {
    const askedAt = Date.now();
    let answer: OperatorAnswer;
    try {
      answer = await callOperator({
        method: 'GET',
        url: `${root}/getSession/`,
        headers: { Authorization: `Bearer ${encrypt(settings.apiKey)}`, Origin: settings.origin },
      });
    } catch (cause) {
      // Not the unreachable error of a money call: no transaction was sent.
      throw new Error(`Vodacom M-Pesa ${market.context} session not issued: getSession did not answer`, { cause });
    }
    const sessionId = field(answer.body, 'output_SessionID');
    if (!accepted(answer) || field(answer.body, 'output_ResponseCode') !== 'INS-0' || !sessionId) {
      const code = field(answer.body, 'output_ResponseCode') ?? '';
      throw new Error(`Vodacom M-Pesa ${market.context} session refused: HTTP ${answer.status} ${code.trim()}`);
    }
    return { bearer: encrypt(sessionId), askedAt };
  }
  const sessions = createSessionPool({
    name: `Vodacom M-Pesa ${market.context}`,
    issue: newSession,
    activationMs: settings.sessionActivationMs,
    activationUpToMs: Math.max(settings.sessionActivationMs, DOCUMENTED_ACTIVATION_MS),
    lifetimeMs: settings.sessionLifetimeMs,
    retryMs: SESSION_RETRY_MS,
    onRequestFailure: (error) =>
      logger.warn(
        [
          `Vodacom M-Pesa ${market.context}: a session was not issued`,
          '(a session held, if any, serves while it is asked for again)',
        ].join(' '),
        { error },
      ),
  });

  const send = (request: Request, bearer: string, deadline: number) =>
    callOperator({
      method: request.method,
      url: `${root}/${request.path}/${request.query ? `?${new URLSearchParams(request.query).toString()}` : ''}`,
      headers: { Authorization: `Bearer ${bearer}`, Origin: settings.origin },
      json: request.json,
      timeoutMs: Math.min(request.timeoutMs ?? operatorTimeoutMs(), deadline - Date.now()),
    });
  /** A 401 that refuses the session (not one of the transaction answers M-Pesa also sends with 401). */
  const sessionRefused = (answer: OperatorAnswer) =>
    answer.status === 401 && !TRANSACTION_401_CODES.has(field(answer.body, 'output_ResponseCode') ?? '');

  return {
    warmUp: sessions.warm,
    stop: sessions.stop,
    /**
     * One call with a session of the market; one M-Pesa refuses is told to the pool (which drops it,
     * or, when it may only not be active yet, has it tried again after a pause) and the call made
     * again with the session the pool gives next, until M-Pesa takes it or the call's deadline comes
     * (SessionUnavailableError): a call M-Pesa refused for its session carried out nothing, so the
     * one it takes is the only one.
     */
    async call(request: Request): Promise<OperatorAnswer> {
      const deadline = Date.now() + (request.deadlineMs ?? CALL_DEADLINE_MS);
      for (;;) {
        const bearer = await sessions.active(deadline - LEAST_ANSWER_MS);
        const answer = await send(request, bearer, deadline);
        if (!sessionRefused(answer)) {
          sessions.taken(bearer);
          return answer;
        }
        sessions.refused(bearer);
      }
    },
  };
}
