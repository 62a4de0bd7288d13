import { isLocalHostName, isPublicAddress } from './network-addresses';

/**
 * URLs the service will call on a merchant's behalf (webhook targets, verification URLs): parsed,
 * judged and stored in their normalised form (WHATWG URL `href`: lower-case host, default port
 * dropped, punycode), so what is stored is exactly what is called.
 */
export type CallbackUrlRules = {
  /** Sandbox mode: loopback and private addresses allowed (local receivers). */
  sandbox: boolean;
  /** Whether `http://` is accepted (verification URLs in sandbox mode); otherwise HTTPS only. */
  allowHttp: boolean;
  /** What the URL is, for messages: "Webhook targets", "Verification URLs". */
  subject: string;
};

type CallbackUrlCheck = { url: string; problem?: undefined } | { url?: undefined; problem: string };

/** Whitespace and control characters (CR/LF could split a header or a log line). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
const CONTROL_OR_SPACE = /[\u0000-\u0020\u007f-\u009f\u2028\u2029]/;
/** A scheme followed by a non-empty authority, in the text as sent (`https:///x` has none). */
const WITH_AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]/i;

export function checkCallbackUrl(raw: string, rules: CallbackUrlRules): CallbackUrlCheck {
  if (CONTROL_OR_SPACE.test(raw))
    return { problem: 'Enter a valid URL: it may not contain spaces or control characters.' };
  if (!WITH_AUTHORITY.test(raw) || !URL.canParse(raw)) return { problem: 'Enter a valid URL.' };
  const url = new URL(raw);
  if (!['http:', 'https:'].includes(url.protocol) || url.hostname === '') return { problem: 'Enter a valid URL.' };
  if (url.protocol !== 'https:' && !rules.allowHttp) {
    return { problem: `Enter a valid HTTPS URL: ${rules.subject.toLowerCase()} must use https://.` };
  }
  if (url.username !== '' || url.password !== '') {
    return {
      problem: `Enter a URL without a user name or password: ${rules.subject.toLowerCase()} may not carry credentials.`,
    };
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const isAddress = /^[\d.]+$/.test(host) || url.hostname.startsWith('[');
  if (!rules.sandbox && (isLocalHostName(host) || (isAddress && !isPublicAddress(host)))) {
    return {
      problem: `Enter a public address: ${rules.subject.toLowerCase()} may not point to loopback or private networks.`,
    };
  }
  return { url: url.href };
}
