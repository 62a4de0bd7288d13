/**
 * Server-side HTML that escapes by default: every value interpolated into an `html` template is
 * escaped, unless it is itself `Html` (another template's output, or markup passed through `raw`
 * on purpose). Text typed by a merchant or a subscriber (names, references, metadata, URLs) can
 * therefore only ever appear as text.
 */

/** Markup that is already safe to emit. Only `html` and `raw` make one. */
export class Html {
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup;
  }
}

export type Child = Html | string | number | bigint | boolean | null | undefined | readonly Child[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text safe inside an element or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character]!);
}

function render(child: Child): string {
  if (child instanceof Html) return child.markup;
  if (child === null || child === undefined || child === false) return '';
  if (Array.isArray(child)) return child.map(render).join('');
  return escapeHtml(String(child));
}

/**
 * A template whose interpolations are escaped; arrays are rendered item by item; null, undefined and false render
 * nothing.
 */
export function html(strings: TemplateStringsArray, ...values: Child[]): Html {
  let markup = strings[0] ?? '';
  for (let index = 0; index < values.length; index += 1)
    markup += render(values[index] as Child) + (strings[index + 1] ?? '');
  return new Html(markup);
}

/** Trusted markup, emitted as it is: only for markup this code wrote itself, never for input. */
export const raw = (markup: string): Html => new Html(markup);
