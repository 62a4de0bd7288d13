/**
 * A minimal browser for console tests through `app.handle`: keeps cookies, follows nothing by
 * itself, and sends forms with the CSRF token of the last page it read.
 */
import { randomBytes } from 'node:crypto';
import type { TestApp } from './helpers';
import { BASE_URL, testSql } from './helpers';
import { createUser } from '../src/services/merchants/users';
import type { Role } from '../src/domain/roles';
import type { OrganizationId } from '../src/domain/ids';

export type ConsoleAnswer = { status: number; text: string; headers: Headers; location: string | null };

export const uniqueEmail = (label = 'user'): string => `${label}-${randomBytes(4).toString('hex')}@console.test`;
export const PASSWORD = 'correct horse battery';

/** A console user of the organization (an admin unless told otherwise). */
export async function consoleUser(organizationId: OrganizationId, options: { role?: Role; email?: string } = {}) {
  const email = options.email ?? uniqueEmail();
  const user = await createUser(testSql(), {
    organizationId,
    email,
    password: PASSWORD,
    role: options.role ?? 'admin',
  });
  return { ...user, email, password: PASSWORD };
}

export class ConsoleClient {
  private readonly cookies = new Map<string, string>();
  lastPage = '';

  constructor(
    private readonly app: TestApp['app'],
    private readonly headers: Record<string, string> = {},
  ) {}

  /** The CSRF token in the last page read. */
  csrf(): string {
    const token = /name="_csrf" value="([^"]+)"/.exec(this.lastPage)?.[1];
    if (!token) throw new Error('the last page has no CSRF token');
    return token;
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  setCookie(name: string, value: string): void {
    this.cookies.set(name, value);
  }

  async request(
    path: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<ConsoleAnswer> {
    const headers: Record<string, string> = { Accept: 'text/html', ...this.headers, ...(init.headers ?? {}) };
    if (this.cookies.size > 0) headers.Cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const response = await this.app.handle(
      new Request(`${BASE_URL}${path}`, {
        method: init.method ?? (body === undefined ? 'GET' : 'POST'),
        headers,
        body,
      }),
    );
    for (const setCookie of response.headers.getSetCookie()) {
      const [pair = ''] = setCookie.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator);
      const value = pair.slice(separator + 1);
      if (value === '' || /max-age=0/i.test(setCookie)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await response.text();
    if (response.headers.get('content-type')?.startsWith('text/html')) this.lastPage = text;
    return { status: response.status, text, headers: response.headers, location: response.headers.get('location') };
  }

  get(path: string, headers: Record<string, string> = {}): Promise<ConsoleAnswer> {
    return this.request(path, { headers });
  }

  /** POSTs a form with the CSRF token of the last page read (unless `csrf` is false or given). */
  post(
    path: string,
    form: Record<string, string> = {},
    options: { csrf?: boolean | string } = {},
  ): Promise<ConsoleAnswer> {
    const token = options.csrf === false ? undefined : typeof options.csrf === 'string' ? options.csrf : this.csrf();
    return this.request(path, { form: token === undefined ? form : { _csrf: token, ...form } });
  }

  async signIn(email: string, password: string): Promise<ConsoleAnswer> {
    await this.get('/console/sign-in');
    return await this.post('/console/sign-in', { email, password });
  }
}
