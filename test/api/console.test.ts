/**
 * The web console through `app.handle`: sessions, CSRF, sign-in throttling, permissions, tenant
 * isolation and escaping, against the real database. (The browser tests in test/browser drive the
 * same pages in Chromium.)
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import {
  LIVE_METRICS_TOKEN,
  createMerchant,
  eventually,
  numberSequence,
  requester,
  testApp,
  testSql,
  uniqueNumber,
  type TestApp,
  type TestMerchant,
} from '../helpers';
import postgres from 'postgres';
import { ConsoleClient, PASSWORD, consoleUser, uniqueEmail, type ConsoleAnswer } from '../console-helpers';
import { issueKeyForUser } from '../../src/services/merchants/api-keys';
import {
  SIGN_IN_ACCOUNT_ADDRESS_LIMIT,
  SIGN_IN_ACCOUNT_LIMIT,
  SIGN_IN_ADDRESS_LIMIT,
} from '../../src/services/merchants/sign-in-throttle';
import { SIGN_IN_FORM_SECONDS, issueSignInForm } from '../../src/console/session';
import { OPENAPI_DOCUMENT_PATH } from '../../src/api/openapi';
import type { Role } from '../../src/domain/roles';
import { escapeHtml, html, raw } from '../../src/console/html';
import { acceptVerified, storeIncomingPayment } from '../../src/services/collections/collection-receiving';
import { beginPayment, finishPayment } from '../../src/services/payments/payment-state';
import { collected, paid } from '../settlement-helpers';
import { asId, type OrganizationId } from '../../src/domain/ids';

let ctx: TestApp;
let merchant: TestMerchant;
let other: TestMerchant;
const started: string[] = [];

beforeAll(async () => {
  // TRUST_PROXY: the sign-in throttle counts per the X-Forwarded-For address these tests send.
  ctx = await testApp(undefined, { TRUST_PROXY: 'true' });
  merchant = await createMerchant(ctx.app);
  other = await createMerchant(ctx.app);
});

afterAll(async () => {
  // Requests, events, payments and reversals created here have no worker on their task queue: end their workflows.
  await Promise.all(
    started.map((id) =>
      ctx.client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => {}),
    ),
  );
});

const address = () => `192.0.2.${Math.floor(Math.random() * 250) + 1}-${randomBytes(3).toString('hex')}`;
const client = (forwardedFor = address()) =>
  new ConsoleClient(ctx.app, { 'X-Forwarded-For': `203.0.113.9, ${forwardedFor}` });

async function signedIn(organizationId: OrganizationId, options: { role?: Role } = {}) {
  const user = await consoleUser(organizationId, options);
  const browser = client();
  const answer = await browser.signIn(user.email, PASSWORD);
  expect(answer.status).toBe(303);
  return { user, browser };
}

describe('escaping', () => {
  test('every interpolation is escaped unless it is markup made by html or raw', () => {
    const name = `<script>alert(1)</script> & "quotes" 'too'`;
    expect(html`<p title="${name}">${name}</p>`.markup).toBe(
      '<p title="&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;too&#39;">&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;too&#39;</p>',
    );
    expect(html`<ul>${['<a>', html`<li>${'<b>'}</li>`]}</ul>`.markup).toBe('<ul>&lt;a&gt;<li>&lt;b&gt;</li></ul>');
    expect(html`${null}${undefined}${false}${0}`.markup).toBe('0');
    expect(html`${raw('<br>')}`.markup).toBe('<br>');
    expect(escapeHtml('&amp;')).toBe('&amp;amp;');
  });
});

describe('sign-in and sessions', () => {
  test('pages need a session: a GET goes to the sign-in page and comes back after it', async () => {
    const user = await consoleUser(merchant.organization.id);
    const browser = client();
    const away = await browser.get('/console/requests?status=failed');
    expect(away.status).toBe(303);
    expect(away.location).toBe('/console/sign-in?next=%2Fconsole%2Frequests%3Fstatus%3Dfailed');

    const form = await browser.get(away.location!);
    expect(form.status).toBe(200);
    expect(form.headers.get('content-type')).toStartWith('text/html');
    expect(form.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(form.text).toContain('<label for="field-email">Email');
    expect(form.text).toContain('<label for="field-password">Password');
    const signIn = await browser.post('/console/sign-in', {
      email: user.email.toUpperCase(),
      password: PASSWORD,
      next: '/console/requests?status=failed',
    });
    expect(signIn.status).toBe(303);
    expect(signIn.location).toBe('/console/requests?status=failed');
    const page = await browser.get(signIn.location!);
    expect(page.status).toBe(200);
    expect(page.text).toContain(merchant.organization.name);
  });

  test('the session cookie is HttpOnly and SameSite=Lax, not Secure in sandbox mode, and only its digest is stored', async () => {
    const user = await consoleUser(merchant.organization.id);
    const browser = client();
    const signIn = await browser.signIn(user.email, PASSWORD);
    const setCookie = signIn.headers.getSetCookie().find((value) => value.startsWith('console_session='))!;
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Lax');
    expect(setCookie).toContain('Path=/');
    expect(setCookie).not.toContain('Secure');
    const token = browser.cookie('console_session')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const rows = await testSql()<{ tokenDigest: Uint8Array }[]>`
      select token_digest as "tokenDigest" from console_sessions where user_id = ${user.id}`;
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0]!.tokenDigest).equals(createHash('sha256').update(token).digest())).toBe(true);
    const dump = JSON.stringify(await testSql()`select * from console_sessions where user_id = ${user.id}`);
    expect(dump).not.toContain(token);
  });

  test('outside sandbox mode the cookie is Secure and __Host- prefixed', async () => {
    const { app } = await testApp(undefined, {
      SANDBOX: 'false',
      PUBLIC_BASE_URL: 'https://collections.example',
      METRICS_TOKEN: LIVE_METRICS_TOKEN,
    });
    const user = await consoleUser(merchant.organization.id);
    const browser = new ConsoleClient(app);
    const signIn = await browser.signIn(user.email, PASSWORD);
    expect(signIn.status).toBe(303);
    const setCookie = signIn.headers.getSetCookie().find((value) => value.startsWith('__Host-console_session='))!;
    expect(setCookie).toContain('Secure');
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Lax');
    // The sign-in form's pre-session cookie too: a neighbouring subdomain cannot plant one.
    const form = await browser.get('/console/sign-in');
    const preSession = form.headers.getSetCookie().find((value) => value.startsWith('__Host-console_sign_in='))!;
    expect(preSession).toContain('Secure');
    expect(preSession).toContain('Path=/;');
  });

  test('a wrong password, an unknown email and a sign-in form from elsewhere sign nobody in', async () => {
    const user = await consoleUser(merchant.organization.id);
    const browser = client();
    expect((await browser.signIn(user.email, 'wrong password!')).status).toBe(401);
    expect((await browser.signIn(uniqueEmail('nobody'), PASSWORD)).status).toBe(401);
    // No sign-in cookie and token pair: a cross-site form cannot sign the browser in (login CSRF).
    const forged = await client().post(
      '/console/sign-in',
      { email: user.email, password: PASSWORD },
      { csrf: 'made-up' },
    );
    expect(forged.status).toBe(403);
    expect(browser.cookie('console_session')).toBeUndefined();
  });

  test("the sign-in form's token must be one the service signed: a cookie and a field the client chose sign nobody in", async () => {
    const user = await consoleUser(merchant.organization.id);
    const refusedWith = async (browser: ConsoleClient, csrf: string) => {
      const answer = await browser.post('/console/sign-in', { email: user.email, password: PASSWORD }, { csrf });
      expect(answer.status).toBe(403);
      expect(answer.text).toContain('The sign-in form expired or was not sent from this site');
      expect(browser.cookie('console_session')).toBeUndefined();
    };
    // The bare double submit: the same made-up value in the cookie and in the form.
    const forger = client();
    forger.setCookie('console_sign_in', 'attackerchosen');
    await refusedWith(forger, 'attackerchosen');
    // A real page's cookie with a made-up token, and a nonce of the right shape with a token of the right shape.
    const browser = client();
    await browser.get('/console/sign-in');
    const token = browser.csrf();
    await refusedWith(browser, 'attackerchosen');
    const shaped = client();
    shaped.setCookie('console_sign_in', 'n'.repeat(32));
    await refusedWith(shaped, `${Math.floor(Date.now() / 1000) + 600}.${'s'.repeat(43)}`);
    // A real token is bound to its own page's nonce: with another browser's cookie it does not pass.
    const other = client();
    await other.get('/console/sign-in');
    await refusedWith(other, token);
    // Signed with another key, or expired: refused.
    const foreign = issueSignInForm("another service's key, not this one");
    const foreignBrowser = client();
    foreignBrowser.setCookie('console_sign_in', foreign.nonce);
    await refusedWith(foreignBrowser, foreign.token);
    const expired = issueSignInForm(ctx.config.console.secret, Date.now() - (SIGN_IN_FORM_SECONDS + 1) * 1000);
    const late = client();
    late.setCookie('console_sign_in', expired.nonce);
    await refusedWith(late, expired.token);
    // The real page's pair signs in (the refusals above cost no attempt and the form is shown afresh).
    await browser.get('/console/sign-in');
    expect((await browser.post('/console/sign-in', { email: user.email, password: PASSWORD })).status).toBe(303);
    expect(browser.cookie('console_session')).toBeDefined();
    expect(browser.cookie('console_sign_in')).toBeUndefined();
  });

  test('an email with an invisible character or mixed scripts is refused at sign-in with a 400 on the field, costing no attempt', async () => {
    const user = await consoleUser(merchant.organization.id);
    const from = address();
    for (const spelling of [user.email.replace('@', '\u200b@'), user.email.replace('e', '\u0435')]) {
      const answer = await client(from).signIn(spelling, PASSWORD);
      expect(answer.status).toBe(400);
      expect(answer.text).toContain('id="error-email"');
      expect(answer.text).toMatch(/invisible or control characters|mixes Latin and Cyrillic letters/);
    }
    const [{ count }] = await testSql()<
      [{ count: number }]
    >`select count(*)::int as count from sign_in_attempts where key like ${`%${from}`}`;
    expect(count).toBe(0);
    expect((await client(from).signIn(user.email, PASSWORD)).status).toBe(303);
  });

  test('sign-out deletes the session: the old cookie no longer opens a page', async () => {
    const { user, browser } = await signedIn(merchant.organization.id);
    const token = browser.cookie('console_session')!;
    await browser.get('/console');
    const signOut = await browser.post('/console/sign-out');
    expect(signOut.status).toBe(303);
    expect(signOut.headers.getSetCookie().join()).toContain('Max-Age=0');
    const [{ count }] = await testSql()<
      [{ count: number }]
    >`select count(*)::int as count from console_sessions where user_id = ${user.id}`;
    expect(count).toBe(0);
    const replay = new ConsoleClient(ctx.app);
    replay.setCookie('console_session', token);
    expect((await replay.get('/console')).status).toBe(303);
  });

  test('an expired session is no session', async () => {
    const { user, browser } = await signedIn(merchant.organization.id);
    await testSql()`update console_sessions set expires_at = now() - interval '1 second' where user_id = ${user.id}`;
    const answer = await browser.get('/console/contacts');
    expect(answer.status).toBe(303);
    expect(answer.location).toStartWith('/console/sign-in');
  });

  test('the sign-in page sends nobody to another site after signing in', async () => {
    const user = await consoleUser(merchant.organization.id);
    const browser = client();
    await browser.get('/console/sign-in?next=https://evil.example/');
    expect(browser.lastPage).toContain('name="next" value="/console"');
    const signIn = await browser.post('/console/sign-in', {
      email: user.email,
      password: PASSWORD,
      next: '//evil.example/console',
    });
    expect(signIn.location).toBe('/console');
  });
});

describe('CSRF', () => {
  test("a POST without the session's token is refused with 403 and changes nothing", async () => {
    const { browser } = await signedIn(merchant.organization.id);
    await browser.get('/console/contacts/new');
    const form = { first_name: 'Forged', last_name: 'Post', phone_number: '+256772000901' };
    expect((await browser.post('/console/contacts', form, { csrf: false })).status).toBe(403);
    expect((await browser.post('/console/contacts', form, { csrf: 'x'.repeat(43) })).status).toBe(403);
    // Another session's token does not fit this session either.
    const { browser: otherBrowser } = await signedIn(merchant.organization.id);
    await otherBrowser.get('/console');
    const refused = await browser.post('/console/contacts', form, { csrf: otherBrowser.csrf() });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toStartWith('text/html');
    expect(refused.text).toContain('security token');
    const [{ count }] = await testSql()<
      [{ count: number }]
    >`select count(*)::int as count from contacts where first_name = 'Forged' and organization_id = ${merchant.organization.id}`;
    expect(count).toBe(0);

    await browser.get('/console/contacts/new');
    const accepted = await browser.post('/console/contacts', { ...form, verify: 'false' });
    expect(accepted.status).toBe(303);
    const [{ count: after }] = await testSql()<
      [{ count: number }]
    >`select count(*)::int as count from contacts where first_name = 'Forged' and organization_id = ${merchant.organization.id}`;
    expect(after).toBe(1);
    const [event] = await testSql()<
      { id: number }[]
    >`select id from events where organization_id = ${merchant.organization.id} order by id desc limit 1`;
    started.push(`event-${event!.id}`);
  });

  test("a signed-in form takes only its session's token: not a made-up pair, not a sign-in form's signed token", async () => {
    const { browser } = await signedIn(merchant.organization.id);
    const form = { first_name: 'Paired', last_name: 'Forgery', phone_number: '+256772000902', verify: 'false' };
    browser.setCookie('console_sign_in', 'attackerchosen');
    expect((await browser.post('/console/contacts', form, { csrf: 'attackerchosen' })).status).toBe(403);
    const signInPage = client();
    await signInPage.get('/console/sign-in');
    browser.setCookie('console_sign_in', signInPage.cookie('console_sign_in')!);
    expect((await browser.post('/console/contacts', form, { csrf: signInPage.csrf() })).status).toBe(403);
    const [{ count }] = await testSql()<
      [{ count: number }]
    >`select count(*)::int as count from contacts where first_name = 'Paired' and organization_id = ${merchant.organization.id}`;
    expect(count).toBe(0);
  });

  test('sign-out is a POST with the token too', async () => {
    const { browser } = await signedIn(merchant.organization.id);
    await browser.get('/console');
    expect((await browser.post('/console/sign-out', {}, { csrf: false })).status).toBe(403);
    expect((await browser.get('/console')).status).toBe(200);
  });
});

describe('sign-in throttling', () => {
  const failFrom = async (from: string, email: string, times: number) => {
    for (let attempt = 0; attempt < times; attempt += 1) {
      expect((await client(from).signIn(email, `wrong password ${attempt}`)).status).toBe(401);
    }
  };

  test(`${SIGN_IN_ACCOUNT_ADDRESS_LIMIT} failures lock the account at that address only: the owner at another address still signs in`, async () => {
    const user = await consoleUser(merchant.organization.id);
    const neighbour = await consoleUser(merchant.organization.id);
    const guesser = address();
    await failFrom(guesser, user.email, SIGN_IN_ACCOUNT_ADDRESS_LIMIT);
    const locked = await client(guesser).signIn(user.email, PASSWORD);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(locked.text).toContain('Too many failed sign-in attempts');
    // Knocking at the lock counts against nothing else: not the account's total over all addresses.
    for (let attempt = 0; attempt < SIGN_IN_ACCOUNT_LIMIT; attempt += 1) {
      expect((await client(guesser).signIn(user.email, 'still guessing')).status).toBe(429);
    }
    // The owner, from their own address, signs in with the right password.
    expect((await client().signIn(user.email, PASSWORD)).status).toBe(303);
    // The guesser's address is still refused for that account, even with the right password.
    expect((await client(guesser).signIn(user.email, PASSWORD)).status).toBe(429);
    // And still signs another account in: its count is below the address limit.
    expect((await client(guesser).signIn(neighbour.email, PASSWORD)).status).toBe(303);
  });

  test(`the account's own limit stops guesses spread across addresses: ${SIGN_IN_ACCOUNT_LIMIT} failures over all of them lock it everywhere`, async () => {
    const user = await consoleUser(merchant.organization.id);
    const addresses = SIGN_IN_ACCOUNT_LIMIT / SIGN_IN_ACCOUNT_ADDRESS_LIMIT;
    for (let index = 0; index < addresses; index += 1)
      await failFrom(address(), user.email, SIGN_IN_ACCOUNT_ADDRESS_LIMIT);
    const elsewhere = await client().signIn(user.email, PASSWORD);
    expect(elsewhere.status).toBe(429);
    expect(Number(elsewhere.headers.get('retry-after'))).toBeGreaterThan(14 * 60);
    const [row] = await testSql()<
      { attempts: number }[]
    >`select attempts from sign_in_attempts where key = ${`account:${user.email}`}`;
    expect(row!.attempts).toBe(SIGN_IN_ACCOUNT_LIMIT);
  });

  test('an IPv6 client counts by its /64: other addresses of its network share its lock, another network does not', async () => {
    const user = await consoleUser(merchant.organization.id);
    const network = `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}`;
    for (let host = 1; host <= SIGN_IN_ACCOUNT_ADDRESS_LIMIT; host += 1) {
      expect((await client(`${network}::${host}`).signIn(user.email, 'wrong password')).status).toBe(401);
    }
    expect((await client(`${network}:0:0:0:99`).signIn(user.email, PASSWORD)).status).toBe(429);
    expect(
      (await client(`2001:db8:ffff:${randomBytes(2).toString('hex')}::1`).signIn(user.email, PASSWORD)).status,
    ).toBe(303);
  });

  test('the lock lasts the whole window from the failure that reached the limit, whenever the window began', async () => {
    const user = await consoleUser(merchant.organization.id);
    const from = address();
    const key = `account-address:${user.email} ${from}`;
    expect((await client(from).signIn(user.email, PASSWORD)).status).toBe(303);
    // The window began with that successful sign-in ten minutes ago.
    await testSql()`update sign_in_attempts set window_start = now() - interval '10 minutes' where key = ${key}`;
    await failFrom(from, user.email, SIGN_IN_ACCOUNT_ADDRESS_LIMIT);
    const locked = await client(from).signIn(user.email, PASSWORD);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(14 * 60);
    expect(locked.text).toContain('Try again in 15 minutes');
    // A locked key takes no more attempts: the lock is not pushed further by knocking.
    const [row] = await testSql()<{ attempts: number }[]>`select attempts from sign_in_attempts where key = ${key}`;
    expect(row!.attempts).toBe(SIGN_IN_ACCOUNT_ADDRESS_LIMIT);
    // Once the lock has run its time, the account signs in again from there.
    await testSql()`update sign_in_attempts set locked_until = now() - interval '1 second' where key = ${key}`;
    expect((await client(from).signIn(user.email, PASSWORD)).status).toBe(303);
  });

  test('a locked account stays locked under every spelling of its email: case, İ (U+0130) and full-width letters', async () => {
    const user = await consoleUser(merchant.organization.id, { email: uniqueEmail('victim.iii') });
    const from = address();
    await failFrom(from, user.email, SIGN_IN_ACCOUNT_ADDRESS_LIMIT);
    // Spellings that are the same address once normalised count against the same lock.
    for (const spelling of [user.email.toUpperCase(), ` ${user.email} `, user.email.replace('v', '\uFF56')]) {
      expect((await client(from).signIn(spelling, PASSWORD)).status).toBe(429);
    }
    // `İ` lower-cases to `i` + U+0307 in JavaScript and to `i` in PostgreSQL: such a spelling is another
    // address, which finds no account (it once found the locked one with a fresh count of its own).
    for (const spelling of [
      user.email.replace('i', 'İ'),
      user.email.replaceAll('i', 'İ'),
      user.email.replace('iii', 'iİi'),
    ]) {
      const answer = await client(from).signIn(spelling, PASSWORD);
      expect(answer.status).toBe(401);
    }
  });

  test("emails are stored in one form: another spelling of a user's email cannot make a second user", async () => {
    const user = await consoleUser(merchant.organization.id, { email: `Mixed.${uniqueEmail('case')}`.toUpperCase() });
    expect(user.email).toBe(user.email.toUpperCase());
    const [stored] = await testSql()<{ email: string }[]>`select email from users where id = ${user.id}`;
    expect(stored!.email).toBe(user.email.toLowerCase());
    await expect(
      consoleUser(other.organization.id, { email: user.email.toLowerCase().replace('m', '\uFF4D') }),
    ).rejects.toThrow('cannot be used');
    expect((await client().signIn(user.email.toLowerCase(), PASSWORD)).status).toBe(303);
  });

  test('adding a user whose email another organization uses tells nothing of that organization', async () => {
    const elsewhere = await consoleUser(other.organization.id);
    const { browser } = await signedIn(merchant.organization.id);
    await browser.get('/console/settings/users');
    const form = { name: 'New colleague', password: 'a long enough password', role: 'viewer' };
    const taken = await browser.post('/console/settings/users', { ...form, email: elsewhere.email.toUpperCase() });
    expect(taken.status).toBe(400);
    expect(taken.text).toContain('This email cannot be used for a new user');
    expect(taken.text).not.toMatch(/exist|already|organi[sz]ation has/i);
    // Within the organization, the form says plainly that a colleague has it.
    const colleague = await consoleUser(merchant.organization.id);
    const own = await browser.post('/console/settings/users', { ...form, email: colleague.email });
    expect(own.status).toBe(400);
    expect(own.text).toContain('A user of your organization already has this email.');
  });

  test('a new user whose email holds an invisible character or mixes scripts is refused with a 400 on the email field', async () => {
    const { browser } = await signedIn(merchant.organization.id);
    const form = { name: 'Look-alike', password: 'a long enough password', role: 'viewer' };
    // Digits only: they belong to every script, so the all-Cyrillic address below stays all Cyrillic.
    const stamp = String(randomBytes(4).readUInt32BE());
    const refusals = [
      [`pat\u200b-${stamp}@example.com`, 'Enter the email address without invisible or control characters'],
      [`pat-${stamp}@exa\u00admple.com`, 'Enter the email address without invisible or control characters'],
      [
        `p\u0430t-${stamp}@example.com`,
        'part before the @ uses letters of one script (it mixes Latin and Cyrillic letters)',
      ],
      [
        `pat-${stamp}@ex\u03b1mple.com`,
        'domain (each part between dots) uses letters of one script (it mixes Latin and Greek letters)',
      ],
    ];
    for (const [email, message] of refusals) {
      await browser.get('/console/settings/users');
      const answer = await browser.post('/console/settings/users', { ...form, email: email! });
      expect({ email, status: answer.status }).toEqual({ email, status: 400 });
      expect(answer.text).toContain('id="error-email"');
      expect(answer.text).toContain(message!);
    }
    const [{ count }] = await testSql()<
      [{ count: number }]
    >`select count(*)::int as count from users where email like ${`%${stamp}%`}`;
    expect(count).toBe(0);
    // A plain ASCII address and one wholly in Cyrillic are taken.
    for (const email of [`pat-${stamp}@example.com`, `иван-${stamp}@example.com`]) {
      await browser.get('/console/settings/users');
      expect((await browser.post('/console/settings/users', { ...form, email })).status).toBe(303);
    }
  });

  test(`an address is locked after ${SIGN_IN_ADDRESS_LIMIT} failures over any accounts; another address is not`, async () => {
    const user = await consoleUser(merchant.organization.id);
    const from = address();
    for (let attempt = 0; attempt < SIGN_IN_ADDRESS_LIMIT; attempt += 1) {
      expect((await client(from).signIn(uniqueEmail('guess'), 'wrong password')).status).toBe(401);
    }
    expect((await client(from).signIn(user.email, PASSWORD)).status).toBe(429);
    expect((await client().signIn(user.email, PASSWORD)).status).toBe(303);
  });

  test('successful sign-ins do not add up', async () => {
    const user = await consoleUser(merchant.organization.id);
    const from = address();
    for (let attempt = 0; attempt < SIGN_IN_ACCOUNT_LIMIT + 2; attempt += 1) {
      expect((await client(from).signIn(user.email, PASSWORD)).status).toBe(303);
    }
  });
});

describe('permissions and organizations', () => {
  test('a finance user cannot open or post to users, settings, keys and webhooks', async () => {
    const { browser } = await signedIn(merchant.organization.id, { role: 'finance' });
    const overview = await browser.get('/console');
    expect(overview.status).toBe(200);
    expect(overview.text).not.toContain('href="/console/settings"');
    for (const path of [
      '/console/settings',
      '/console/settings/keys',
      '/console/settings/users',
      '/console/webhooks',
    ]) {
      const answer = await browser.get(path);
      expect({ path, status: answer.status }).toEqual({ path, status: 403 });
      expect(answer.headers.get('content-type')).toStartWith('text/html');
    }
    await browser.get('/console');
    const token = browser.csrf();
    for (const path of [
      '/console/settings/keys',
      '/console/settings/users',
      '/console/webhooks',
      '/console/settings',
    ]) {
      const answer = await browser.post(
        path,
        { email: uniqueEmail(), password: PASSWORD, event: 'contact.created', target: 'https://x.example/' },
        { csrf: token },
      );
      expect({ path, status: answer.status }).toEqual({ path, status: 403 });
    }
    const [{ count }] = await testSql()<
      [{ count: number }]
    >`select count(*)::int as count from api_keys where organization_id = ${merchant.organization.id}`;
    expect(count).toBe(1);
  });

  test("another organization's requests, collections, contacts, events and webhooks are 404 pages", async () => {
    const phone = uniqueNumber('+256772');
    const created = await other.request('/api/collectionrequests', {
      form: { phonenumber: phone, amount: '10', currency: 'BXC' },
    });
    expect(created.status).toBe(201);
    started.push(`collection-request-${created.body.id}`);
    const hook = await other.request('/api/webhooks', {
      form: { event: 'contact.created', target: 'https://other.example/hook' },
    });
    const [event] = await testSql()<
      { id: number }[]
    >`select id from events where organization_id = ${other.organization.id} order by id desc limit 1`;
    started.push(`event-${event!.id}`);
    const [collection] = await testSql()<{ id: number }[]>`
      insert into collections (organization_id, network, remote_transaction_id, amount, currency, phone_number, payment_date, status)
      values (${other.organization.id}, 'Sandbox', ${`CONSOLE-${randomBytes(4).toString('hex')}`}, 10, 'BXC', ${phone}, now(), 'successful') returning id`;
    const { browser } = await signedIn(merchant.organization.id);
    for (const path of [
      `/console/requests/${created.body.id}`,
      `/console/requests/${created.body.id}/live`,
      `/console/contacts/${created.body.contact.id}`,
      `/console/events/${event!.id}`,
      `/console/webhooks/${hook.body.id}`,
      `/console/collections/${collection!.id}`,
    ]) {
      const answer = await browser.get(path);
      expect({ path, status: answer.status }).toEqual({ path, status: 404 });
      expect(answer.headers.get('content-type')).toStartWith('text/html');
    }
    await browser.get(`/console/webhooks`);
    expect((await browser.post(`/console/webhooks/${hook.body.id}/delete`)).status).toBe(404);
    const [live] = await testSql()<
      { deletedAt: Date | null }[]
    >`select deleted_at as "deletedAt" from webhooks where id = ${hook.body.id}`;
    expect(live?.deletedAt).toBeNull();
  });

  test('a user cannot remove themselves; removing another ends their sessions and revokes their keys', async () => {
    const { user: admin, browser } = await signedIn(merchant.organization.id);
    const { user: colleague, browser: colleagueBrowser } = await signedIn(merchant.organization.id, { role: 'admin' });
    await colleagueBrowser.get('/console/settings/keys');
    const created = await colleagueBrowser.post('/console/settings/keys');
    const key = /id="new-api-key">([0-9a-f]{40})</.exec(created.text)?.[1];
    expect(key).toBeDefined();
    expect((await requester(ctx.app, key!)('/api/events')).status).toBe(200);

    await browser.get('/console/settings/users');
    const token = browser.csrf();
    expect((await browser.post(`/console/settings/users/${admin.id}/remove`, {}, { csrf: token })).status).toBe(400);
    expect((await browser.post(`/console/settings/users/${colleague.id}/remove`, {}, { csrf: token })).status).toBe(
      303,
    );
    expect((await colleagueBrowser.get('/console')).status).toBe(303);
    expect((await requester(ctx.app, key!)('/api/events')).status).toBe(401);
    expect((await client().signIn(colleague.email, PASSWORD)).status).toBe(401);
  });
});

describe('removed users and their API keys', () => {
  const newKeyOf = (page: ConsoleAnswer) => /id="new-api-key">([0-9a-f]{40})</.exec(page.text)?.[1];
  /** The users' keys the database still holds live. */
  const liveKeysOf = async (userIds: number[]) =>
    (
      await testSql()<
        { id: number }[]
      >`select id from api_keys where user_id in ${testSql()(userIds)} and revoked_at is null`
    ).map((row) => row.id);
  /** A signed-in developer (who may make keys) on the keys page, and what posting its form answers. */
  async function keyMaker(organizationId: OrganizationId) {
    const { user, browser } = await signedIn(organizationId, { role: 'developer' });
    await browser.get('/console/settings/keys');
    const csrf = browser.csrf();
    return { user, createKey: () => browser.post('/console/settings/keys', {}, { csrf }) };
  }
  async function remover(organizationId: OrganizationId) {
    const { browser } = await signedIn(organizationId, { role: 'admin' });
    await browser.get('/console/settings/users');
    const csrf = browser.csrf();
    return {
      browser,
      remove: async (userId: number) =>
        (await browser.post(`/console/settings/users/${userId}/remove`, {}, { csrf })).status,
    };
  }

  test("a key made before its user's removal answers 401 after it, even when its row was left live", async () => {
    const { organization } = await createMerchant(ctx.app);
    const admin = await remover(organization.id);
    const revoked = await keyMaker(organization.id);
    const key = newKeyOf(await revoked.createKey());
    expect((await requester(ctx.app, key!)('/api/events')).status).toBe(200);
    expect(await admin.remove(revoked.user.id)).toBe(303);
    expect((await requester(ctx.app, key!)('/api/events')).status).toBe(401);

    // A key whose revocation a removal missed (as removals racing key creations did): its user's removal alone refuses it.
    const missed = await consoleUser(organization.id, { role: 'developer' });
    const leftLive = await issueKeyForUser(testSql(), { organizationId: organization.id, userId: missed.id });
    await testSql()`update users set removed_at = now() where id = ${missed.id}`;
    expect(await liveKeysOf([missed.id])).toEqual([leftLive.id]);
    const refused = await requester(ctx.app, leftLive.apiKey)('/api/events');
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 401, body: { detail: 'Invalid token.' } });
    // The console lists it as the API treats it: revoked, with nothing left to revoke.
    const keysPage = (await admin.browser.get('/console/settings/keys')).text;
    expect(keysPage).toContain(`<code>${leftLive.apiKey.slice(0, 12)}…</code>`);
    expect(keysPage).not.toContain(`/console/settings/keys/${leftLive.id}/revoke`);
  });

  test('three users removed while they make 25 keys at once: none of their keys works, and no creation fails with a 5xx', async () => {
    const { organization } = await createMerchant(ctx.app);
    const admin = await remover(organization.id);
    const makers = await Promise.all([1, 2, 3].map(() => keyMaker(organization.id)));
    // All sent at once, each removal among the creations (after the 5th, 13th and 21st): the
    // database takes them in that order, a few at a time (the app's pool), so they interleave.
    const creations: Promise<ConsoleAnswer>[] = [];
    const removals: Promise<number>[] = [];
    for (let index = 0; index < 25; index += 1) {
      creations.push(makers[index % makers.length]!.createKey());
      if (index % 8 === 4) removals.push(admin.remove(makers[removals.length]!.user.id));
    }
    const answers = await Promise.all(creations);
    expect(await Promise.all(removals)).toEqual([303, 303, 303]);

    // Made before the removal (200), refused by it (403), or after it, when the session was gone (303 to sign in).
    expect(answers.map((answer) => answer.status).filter((status) => ![200, 303, 403].includes(status))).toEqual([]);
    const keys = answers.filter((answer) => answer.status === 200).map(newKeyOf);
    for (const key of keys) expect((await requester(ctx.app, key!)('/api/events')).status).toBe(401);
    expect(await liveKeysOf(makers.map((maker) => maker.user.id))).toEqual([]);
  });

  test('key creations caught inside a removal wait for it, then make nothing: a 403 page, never a live key', async () => {
    const { organization } = await createMerchant(ctx.app);
    const admin = await remover(organization.id);
    const maker = await keyMaker(organization.id);
    const earlier = await issueKeyForUser(testSql(), { organizationId: organization.id, userId: maker.user.id });
    // A connection of its own: the app's pool is the tests' one, and the creations below hold its connections while they wait.
    const observer = postgres(ctx.config.databaseUrl, { max: 2, onnotice: () => {} });
    const waiting = async (statement: string) =>
      (
        await observer<{ count: number }[]>`
      select count(*)::int as count from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query ilike ${`%${statement}%`}`
      )[0]!.count;
    const CREATIONS = 3;
    try {
      let removal: Promise<number> | undefined;
      let creations: Promise<ConsoleAnswer>[] = [];
      // Holding one of the user's keys keeps the removal open at its revocation of the user's keys,
      // the user already marked removed but not committed: where creations used to slip in.
      await observer.begin(async (tx) => {
        await tx`select id from api_keys where id = ${earlier.id} for update`;
        removal = admin.remove(maker.user.id);
        await eventually(
          'the removal to wait at the revocation',
          async () => (await waiting('update api_keys set revoked_at')) === 1,
          10_000,
        );
        creations = Array.from({ length: CREATIONS }, () => maker.createKey());
        await eventually(
          'the creations to wait on the removal',
          async () => (await waiting('insert into api_keys')) === CREATIONS,
          10_000,
        );
      });
      expect(await removal).toBe(303);
      const answers = await Promise.all(creations);
      expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: CREATIONS }, () => 403));
      for (const answer of answers)
        expect(answer.text).toContain('Your user has been removed from the organization: no API key was made.');
      expect(await liveKeysOf([maker.user.id])).toEqual([]);
    } finally {
      await observer.end();
    }
  });
});

describe('pages', () => {
  test('console pages answer HTML whatever the Accept header, and console errors are HTML pages', async () => {
    const { browser } = await signedIn(merchant.organization.id);
    expect((await browser.get('/console', { Accept: 'application/json' })).status).toBe(200);
    const missing = await browser.get('/console/no-such-page');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toStartWith('text/html');
    const badFilter = await browser.get('/console/requests?status=nonsense');
    expect(badFilter.status).toBe(400);
    expect(badFilter.text).toContain('is not one of the available choices');
    // The API itself keeps its JSON-only rule.
    expect((await merchant.request('/api/contacts', { headers: { Accept: 'text/html' } })).status).toBe(406);
  });

  test("the Settings page shows an admin how each network is reached and its routes' health (none with the sandbox defaults)", async () => {
    const { browser } = await signedIn(merchant.organization.id);
    const page = await browser.get('/console/settings');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<section class="card" id="network-connections"><h2>Mobile networks</h2>');
    // Each route's row, state and fault: test/api/network-status.test.ts, with connectors on.
    const routes = page.text.slice(
      page.text.indexOf('<section class="card" id="network-routes"><h2>Network routes</h2>'),
    );
    expect(routes).toStartWith('<section class="card" id="network-routes">');
    expect(routes).toContain('No routes: no operator connector is on, so the sandbox serves every network.');
  });

  test('console routes are not in the OpenAPI document', async () => {
    const document = (await merchant.request(OPENAPI_DOCUMENT_PATH)).body as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/console'))).toEqual([]);
  });

  test("a contact's name is shown as text, never as markup", async () => {
    const { browser } = await signedIn(merchant.organization.id);
    await browser.get('/console/contacts/new');
    const created = await browser.post('/console/contacts', {
      first_name: '<script>alert(1)</script>',
      last_name: '<img src=x onerror=alert(2)>',
      phone_number: '+256772000903',
    });
    expect(created.status).toBe(303);
    const [event] = await testSql()<
      { id: number }[]
    >`select id from events where organization_id = ${merchant.organization.id} order by id desc limit 1`;
    started.push(`event-${event!.id}`);
    for (const path of [created.location!, '/console/contacts', `/console/events/${event!.id}`]) {
      const page = (await browser.get(path)).text;
      expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(page).not.toContain('<script>alert(1)');
      expect(page).not.toContain('<img src=x');
    }
  });

  test("a request created in the console is the API's request, and its page shows the timeline and the workflow link", async () => {
    const { browser } = await signedIn(merchant.organization.id);
    await browser.get('/console/requests/new');
    const invalid = await browser.post('/console/requests', {
      phonenumber: 'not a number',
      amount: '1,000',
      currency: 'BXC',
    });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toMatch(/id="error-phonenumber">[^<]*valid phone number/);
    expect(invalid.text).toMatch(/id="error-amount">[^<]*thousands separators/);
    const phone = uniqueNumber('+256772');
    const created = await browser.post('/console/requests', {
      phonenumber: phone,
      amount: '1500',
      currency: 'BXC',
      first_name: 'Ada',
    });
    expect(created.status).toBe(303);
    const id = Number(/\/console\/requests\/(\d+)$/.exec(created.location!)?.[1]);
    started.push(`collection-request-${id}`);
    const viaApi = await merchant.request(`/api/collectionrequests/${id}`);
    expect(viaApi.status).toBe(200);
    expect(viaApi.body).toMatchObject({ amount: '1500.0000', phonenumber: phone, contact: { first_name: 'Ada' } });
    const page = await browser.get(created.location!);
    expect(page.text).toContain(`http://localhost:8233/namespaces/default/workflows/collection-request-${id}`);
    expect(page.text).toContain(`data-live="/console/requests/${id}/live"`);
    const listed = await browser.get(`/console/requests?phonenumber=${phone.slice(1)}`);
    expect(listed.text).toContain(`href="/console/requests/${id}"`);
  });
});

describe('money pages', () => {
  const nextNumber = numberSequence('+256772');

  /** A payment created through the console form: its id (its workflow is ended after the tests). */
  async function consolePayment(browser: ConsoleClient, form: Record<string, string>): Promise<number> {
    await browser.get('/console/payments/new');
    const created = await browser.post('/console/payments', {
      currency: 'BXC',
      description: 'Console payout',
      ...form,
    });
    expect(created.status).toBe(303);
    const id = Number(/^\/console\/payments\/(\d+)\?done=payment-created$/.exec(created.location!)?.[1]);
    expect(id).toBeGreaterThan(0);
    started.push(`payment-${id}`);
    return id;
  }

  /** A collection credited to `owner`, as the incoming-collection workflow leaves it (no workflow here). */
  async function creditedCollection(owner: TestMerchant, amount: string): Promise<number> {
    const collection = await storeIncomingPayment(testSql(), {
      network: 'MTN Uganda',
      remoteTransactionId: `CONSOLE-REV-${randomBytes(4).toString('hex')}`,
      phoneNumber: nextNumber(),
      amount,
      currency: 'BXC',
      reference: 'console',
      paymentDate: new Date().toISOString(),
    });
    await acceptVerified(testSql(), collection.id, owner.organization.id);
    return collection.id;
  }

  const walletOf = async (owner: TestMerchant) =>
    (
      await testSql()<{ id: number; balance: string }[]>`
      select id, balance::text as balance from accounts where organization_id = ${owner.organization.id} and currency = 'BXC' order by id limit 1`
    )[0]!;

  test('the payments, wallets and reversals pages answer, and the navigation leads to them', async () => {
    const { browser } = await signedIn(merchant.organization.id, { role: 'finance' });
    const wallet = await walletOf(merchant);
    for (const path of [
      '/console/payments',
      '/console/payments/new',
      '/console/wallets',
      `/console/wallets/${wallet.id}`,
      '/console/reversals',
      '/console/payments?state=completed&currency=BXC&phonenumber=%2B256772000001',
      `/console/wallets/${wallet.id}?type=funding`,
      '/console/reversals?state=failed',
    ]) {
      const answer = await browser.get(path);
      expect({ path, status: answer.status }).toEqual({ path, status: 200 });
    }
    const overview = (await browser.get('/console')).text;
    expect(overview).toContain('<a href="/console/payments">Payments</a>');
    expect(overview).toContain('<a href="/console/wallets">Wallets</a>');
    expect(overview).toContain(`href="/console/wallets/${wallet.id}"`);
    expect((await browser.get('/console/payments?state=lost')).status).toBe(400);
    expect((await browser.get(`/console/wallets/${wallet.id}?type=gift`)).status).toBe(400);
    // A statement's period: one that ends before it starts is shown with its error; the pages of batches answer.
    const backwards = await browser.get(`/console/wallets/${wallet.id}/statement?since=2025-02-01&until=2025-01-01`);
    expect(backwards.status).toBe(400);
    expect(backwards.text).toContain('The end of the period must come after its start.');
    expect((await browser.get(`/console/wallets/${wallet.id}/statement?since=2000-01-01`)).status).toBe(200);
    for (const path of ['/console/payment-batches', '/console/payment-batches/new'])
      expect((await browser.get(path)).status).toBe(200);
    expect((await browser.get('/console/payment-batches/99999999')).status).toBe(404);
    // A confirmation whose CSV was altered after the preview (unreadable now) is refused, nothing sent.
    await browser.get('/console/payment-batches/new');
    const altered = await browser.post('/console/payment-batches', {
      key: 'altered',
      csv: 'phonenumber,amount\n+256772000001',
    });
    expect(altered.status).toBe(400);
    expect(altered.text).toContain('Nothing was sent: The CSV cannot be read');
    // Every input of the money forms has its label.
    for (const path of [
      '/console/payments/new',
      '/console/payments',
      `/console/wallets/${wallet.id}`,
      '/console/reversals',
    ]) {
      const page = (await browser.get(path)).text;
      for (const [, id] of page.matchAll(/<(?:input|select) id="([^"]+)"/g))
        expect({ path, label: page.includes(`<label for="${id}">`) }).toEqual({ path, label: true });
    }
  });

  test("a payment created in the console is the API's payment: field errors next to fields, insufficient funds said clearly", async () => {
    const payer = await createMerchant(ctx.app);
    const { browser } = await signedIn(payer.organization.id);
    await browser.get('/console/payments/new');
    const invalid = await browser.post('/console/payments', {
      phonenumber: 'nobody',
      amount: '1,000',
      currency: 'BXC',
    });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toMatch(/id="error-phonenumber">[^<]*valid phone number/);
    expect(invalid.text).toMatch(/id="error-amount">[^<]*thousands separators/);
    const tooMuch = await browser.post('/console/payments', {
      phonenumber: nextNumber(),
      amount: '5000',
      currency: 'BXC',
      description: 'Too much',
    });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.text).toContain('id="insufficient-funds"');
    expect(tooMuch.text).toContain('<strong>Insufficient funds.</strong>');
    expect(tooMuch.text).toContain('holds <strong>1,000 BXC</strong>');
    expect(tooMuch.text).toContain('value="5000"');
    expect((await walletOf(payer)).balance).toBe('1000.0000');

    const phone = nextNumber();
    const id = await consolePayment(browser, {
      phonenumber: phone,
      amount: '250.5',
      description: 'Refund A-17',
      first_name: 'Ann',
    });
    const viaApi = await payer.request(`/api/payments/${id}`);
    expect(viaApi.body).toMatchObject({
      amount: '250.5000',
      phone_nos: [phone],
      state: 'new',
      description: 'Refund A-17',
      author: expect.any(Number),
    });
    expect((await walletOf(payer)).balance).toBe('749.5000');
    const page = await browser.get(`/console/payments/${id}?done=payment-created`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Payment created');
    expect(page.text).toContain(`http://localhost:8233/namespaces/default/workflows/payment-${id}`);
    expect(page.text).toContain(`data-live="/console/payments/${id}/live"`);
    expect(page.text).toMatch(/<ol class="timeline"><li>\s*<span class="badge status-new">new<\/span>/);
    expect(page.text).toContain('-250.5 BXC');
    expect(page.text).toContain(`action="/console/payments/${id}/cancel"`);
    expect((await browser.get(`/console/payments?phonenumber=${encodeURIComponent(phone)}`)).text).toContain(
      `href="/console/payments/${id}"`,
    );
    const wallet = await browser.get(`/console/wallets/${(await walletOf(payer)).id}`);
    expect(wallet.text).toContain('749.5 BXC');
    expect(wallet.text).toContain(`href="/console/payments/${id}">payment #${id}</a>`);

    // The network completes it, as the workflow would: the timeline grows, the form to cancel goes, the overview counts it as sent.
    await beginPayment(testSql(), asId('Payment', id));
    await finishPayment(testSql(), asId('Payment', id), {
      status: 'completed',
      remoteTransactionId: `SBX-CONSOLE-${id}`,
    });
    const live = await browser.get(`/console/payments/${id}/live`);
    expect(live.text).toContain('data-final');
    expect([...live.text.matchAll(/<li>\s*<span class="badge status-(\w+)">/g)].map((match) => match[1])).toEqual([
      'new',
      'processing',
      'completed',
    ]);
    expect((await browser.get(`/console/payments/${id}`)).text).not.toContain('/cancel"');
    const overview = (await browser.get('/console')).text;
    expect(overview).toContain('1 payment sent');
    expect(overview).toMatch(/<td>1<\/td><td>250\.5 BXC<\/td><\/tr>/);
  });

  test('a scheduled payment is cancelled with a reason through a CSRF-protected form; its amount comes back', async () => {
    const payer = await createMerchant(ctx.app);
    const { browser } = await signedIn(payer.organization.id);
    const id = await consolePayment(browser, { phonenumber: nextNumber(), amount: '100', start_date: 'tomorrow' });
    expect((await payer.request(`/api/payments/${id}`)).body.state).toBe('scheduled');
    await browser.get(`/console/payments/${id}`);
    const token = browser.csrf();
    expect((await browser.post(`/console/payments/${id}/cancel`, { reason: 'forged' }, { csrf: false })).status).toBe(
      403,
    );
    expect((await payer.request(`/api/payments/${id}`)).body.state).toBe('scheduled');
    await browser.get(`/console/payments/${id}`);
    expect(browser.csrf()).toBe(token);
    const tooLong = await browser.post(`/console/payments/${id}/cancel`, { reason: 'x'.repeat(300) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toMatch(/id="error-reason">/);
    const cancelled = await browser.post(`/console/payments/${id}/cancel`, { reason: 'Wrong number' });
    expect(cancelled.status).toBe(303);
    expect(cancelled.location).toBe(`/console/payments/${id}?done=payment-cancelled`);
    expect((await payer.request(`/api/payments/${id}`)).body).toMatchObject({
      state: 'cancelled',
      cancelled_reason: 'Wrong number',
    });
    expect((await walletOf(payer)).balance).toBe('1000.0000');
    const page = await browser.get(cancelled.location!);
    expect(page.text).toContain('Payment cancelled');
    expect(page.text).toContain('Wrong number');
    expect(page.text).toContain('+100 BXC');
    // Cancelling again is refused with the API's reason.
    await browser.get('/console/payments');
    const again = await browser.post(`/console/payments/${id}/cancel`, { reason: 'twice' });
    expect(again.status).toBe(400);
    expect(again.text).toContain('A cancelled payment cannot be cancelled');
  });

  test("a subscription is cancelled from its request's page through a CSRF-protected button; another organization's is 404", async () => {
    const subscriber = await createMerchant(ctx.app);
    const { browser } = await signedIn(subscriber.organization.id);
    const year = new Date().getUTCFullYear() + 1;
    const created = await subscriber.request('/api/collectionrequests', {
      body: {
        phonenumber: nextNumber(),
        amount: '10',
        currency: 'BXC',
        subscription_settings: {
          start_date: `01/01/${year} 09:00:00`,
          end_date: `01/06/${year} 09:00:00`,
          frequency: 'monthly',
        },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    const action = `/console/requests/${id}/subscription/cancel`;
    const page = await browser.get(`/console/requests/${id}`);
    expect(page.text).toContain(`action="${action}"`);
    expect(page.text).toContain('<span id="subscription-status">active</span>');
    expect((await browser.post(action, {}, { csrf: false })).status).toBe(403);
    expect(
      JSON.parse((await subscriber.request(`/api/collectionrequests/${id}`)).body.subscription_settings),
    ).not.toHaveProperty('cancelled_at');
    // Another organization's user cannot cancel it, nor learn it exists.
    const outsider = (await signedIn(other.organization.id)).browser;
    await outsider.get('/console/requests');
    expect((await outsider.post(action, {})).status).toBe(404);
    expect(
      JSON.parse((await subscriber.request(`/api/collectionrequests/${id}`)).body.subscription_settings),
    ).not.toHaveProperty('cancelled_at');
    await browser.get(`/console/requests/${id}`);
    const cancelled = await browser.post(action, {});
    expect(cancelled.status).toBe(303);
    expect(cancelled.location).toBe(`/console/requests/${id}?done=subscription-cancelled`);
    const after = await browser.get(cancelled.location!);
    expect(after.text).toContain('Subscription cancelled: no further request is created from it.');
    expect(after.text).toMatch(
      /<span id="subscription-status">cancelled on \d{2}\/\d{2}\/\d{4} \d{2}:\d{2}:\d{2}<\/span>/,
    );
    expect(after.text).not.toContain(`action="${action}"`);
    expect(
      JSON.parse((await subscriber.request(`/api/collectionrequests/${id}`)).body.subscription_settings),
    ).toHaveProperty('cancelled_at');
  });

  test('a successful collection is sent back from its page; the collection shows its reversal; a second one is refused', async () => {
    const { browser } = await signedIn(merchant.organization.id);
    const collectionId = await creditedCollection(merchant, '40');
    const page = await browser.get(`/console/collections/${collectionId}`);
    expect(page.text).toContain(`action="/console/collections/${collectionId}/reverse"`);
    expect(page.text).toContain('+40 BXC');
    const token = browser.csrf();
    expect(
      (await browser.post(`/console/collections/${collectionId}/reverse`, { reason: 'forged' }, { csrf: false }))
        .status,
    ).toBe(403);
    expect(
      (
        await browser.post(
          `/console/collections/${collectionId}/reverse`,
          { reason: 'forged' },
          { csrf: 'x'.repeat(43) },
        )
      ).status,
    ).toBe(403);
    expect((await merchant.request(`/api/reversals?collection=${collectionId}`)).body.count).toBe(0);
    const reversed = await browser.post(
      `/console/collections/${collectionId}/reverse`,
      { reason: 'Order cancelled' },
      { csrf: token },
    );
    expect(reversed.status).toBe(303);
    const reversalId = Number(/^\/console\/reversals\/(\d+)\?done=reversal-created$/.exec(reversed.location!)?.[1]);
    started.push(`reversal-${reversalId}`);
    expect((await merchant.request(`/api/reversals/${reversalId}`)).body).toMatchObject({
      collection: collectionId,
      state: 'processing',
      reason: 'Order cancelled',
    });
    const reversal = await browser.get(reversed.location!);
    expect(reversal.text).toContain('Reversal started');
    expect(reversal.text).toContain(`workflows/reversal-${reversalId}`);
    expect(reversal.text).toContain('-40 BXC');
    const after = await browser.get(`/console/collections/${collectionId}`);
    expect(after.text).toContain(`href="/console/reversals/${reversalId}"`);
    expect(after.text).not.toContain('/reverse"');
    expect((await browser.get('/console/reversals')).text).toContain(`href="/console/reversals/${reversalId}"`);
    const twice = await browser.post(`/console/collections/${collectionId}/reverse`, { reason: 'again' });
    expect(twice.status).toBe(400);
    expect(twice.text).toContain(`This collection was reversed already (reversal ${reversalId}).`);
  });

  test("another organization's payments, wallets, reversals and collections are 404 pages, and their forms change nothing", async () => {
    const { browser: otherBrowser } = await signedIn(other.organization.id);
    const paymentId = await consolePayment(otherBrowser, {
      phonenumber: nextNumber(),
      amount: '5',
      start_date: 'tomorrow',
    });
    const collectionId = await creditedCollection(other, '7');
    const reversal = await other.request('/api/reversals', { form: { collection: String(collectionId) } });
    expect(reversal.status).toBe(201);
    started.push(`reversal-${reversal.body.id}`);
    const otherCollection = await creditedCollection(other, '8');
    const wallet = await walletOf(other);
    const { browser } = await signedIn(merchant.organization.id);
    for (const path of [
      `/console/payments/${paymentId}`,
      `/console/payments/${paymentId}/live`,
      `/console/wallets/${wallet.id}`,
      `/console/reversals/${reversal.body.id}`,
      `/console/reversals/${reversal.body.id}/live`,
      `/console/collections/${otherCollection}`,
      '/console/payments/99999999999',
      '/console/wallets/0',
      '/console/reversals/abc',
    ]) {
      const answer = await browser.get(path);
      expect({ path, status: answer.status }).toEqual({ path, status: 404 });
      expect(answer.headers.get('content-type')).toStartWith('text/html');
    }
    await browser.get('/console/payments');
    const token = browser.csrf();
    expect(
      (await browser.post(`/console/payments/${paymentId}/cancel`, { reason: 'not mine' }, { csrf: token })).status,
    ).toBe(404);
    expect(
      (await browser.post(`/console/collections/${otherCollection}/reverse`, { reason: 'not mine' }, { csrf: token }))
        .status,
    ).toBe(404);
    expect((await other.request(`/api/payments/${paymentId}`)).body.state).toBe('scheduled');
    expect((await other.request(`/api/reversals?collection=${otherCollection}`)).body.count).toBe(0);
    // Nor do another organization's payments appear in this one's lists.
    expect((await browser.get('/console/payments')).text).not.toContain(`href="/console/payments/${paymentId}"`);
    expect((await browser.get('/console/reversals')).text).not.toContain(
      `href="/console/reversals/${reversal.body.id}"`,
    );
  });

  test("a payment's description is shown as text, never as markup", async () => {
    const { browser } = await signedIn(merchant.organization.id);
    const id = await consolePayment(browser, {
      phonenumber: nextNumber(),
      amount: '1',
      description: '<script>alert(1)</script>',
      start_date: 'tomorrow',
    });
    const [event] = await testSql()<{ id: number }[]>`
      select id from events where organization_id = ${merchant.organization.id} and type = 'payment.status.changed' and data->>'id' = ${String(id)}`;
    for (const path of [`/console/payments/${id}`, '/console/payments', `/console/events/${event!.id}`]) {
      const page = (await browser.get(path)).text;
      expect({ path, escaped: page.includes('&lt;script&gt;alert(1)&lt;/script&gt;') }).toEqual({
        path,
        escaped: true,
      });
      expect(page).not.toContain('<script>alert(1)');
    }
  });
  test("the settlement page shows a day's totals and movements of the organization only, its CSV, and a refused day with its error", async () => {
    const owner = await createMerchant(ctx.app);
    const collection = await collected(owner, 'MTN Uganda', '+256772', 'BXC', '40.5', '2023-07-14T08:00:00.000Z');
    const payout = await paid(owner, '+256772', 'BXC', '15', '2023-07-14T09:30:00.000Z');
    const theirs = await collected(other, 'MTN Uganda', '+256772', 'BXC', '7', '2023-07-14T10:00:00.000Z');
    const { browser } = await signedIn(owner.organization.id, { role: 'finance' });
    expect((await browser.get('/console')).text).toContain('<a href="/console/settlements">Settlement</a>');
    const page = await browser.get('/console/settlements?date=2023-07-14');
    expect(page.status).toBe(200);
    expect(page.text).toContain('value="2023-07-14"');
    expect(page.text).toMatch(
      /<td>MTN Uganda<\/td><td>BXC<\/td><td>1 · 40\.5 BXC<\/td><td>1 · 15 BXC<\/td><td>0 · 0 BXC<\/td><td><strong><span class="amount credit">\+25\.5 BXC<\/span><\/strong><\/td>/,
    );
    expect(page.text).toContain(`<a href="/console/collections/${collection.id}">collection #${collection.id}</a>`);
    expect(page.text).toContain(`<td>${collection.remoteTransactionId}</td>`);
    expect(page.text).toContain(`<a href="/console/payments/${payout.id}">payment #${payout.id}</a>`);
    expect(page.text).toContain(payout.remoteTransactionId);
    expect(page.text).not.toContain(theirs.remoteTransactionId);
    expect(page.text).toContain('href="/console/settlements.csv?date=2023-07-14"');
    const csv = await browser.get('/console/settlements.csv?date=2023-07-14');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="settlement-2023-07-14.csv"');
    expect(csv.text).toContain(
      `MTN Uganda,BXC,collection,${collection.id},${owner.organization.id},${collection.remoteTransactionId},`,
    );
    expect(csv.text).not.toContain(theirs.remoteTransactionId);
    const refused = await browser.get('/console/settlements?date=2023-02-30');
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Enter a valid date, such as 2025-05-01.');
    expect(refused.text).toMatch(/id="error-date">/);
    expect((await browser.get('/console/settlements')).status).toBe(200);
  });
});
