/**
 * The console's list pages as declarations. A list page states its path, section and title, its
 * filters (the form's fields and the service's filter schema they fill), the service call that
 * loads its rows, its columns (a heading and what a row shows under it) and the text of an empty
 * list; `listPage` reads the query string as the API does (a blank field is no filter, `limit`
 * and `offset` page), and renders the filter form, the table, the pager and the page around them.
 *
 * A new list page:
 * 1. Declare it with `listPage(config, { path, section, title, ... })` in its module under pages/; a page that opens
 *    a section of its own also needs the section in the navigation (layout.ts).
 * 2. Give `filters.schema` the service's filter schema (the API's, so a filter means the same in both) and
 *    `filters.fields` one field per filter, named as the schema's key (`dateFilters` adds `_after`/`_before`).
 * 3. Load the rows with `page` (one page of rows and the count of all that match: the list gets a pager) or,
 *    for a list short enough to show whole, `all`.
 * 4. List its `columns` and say what an empty list reads (`empty`).
 * 5. Put what else the page shows (links, notices, forms) in `above` and `below`; a form of the page that is
 *    refused shows the page again through the same function with its state and a 400.
 * 6. Serve it with `.get(path, ({ request, session }) => list({ request, session }), { page: CAPABILITY })`,
 *    and cover it in test/api/console.test.ts.
 */
import type * as v from 'valibot';
import type { Config } from '../config';
import { parseFilters } from '../http/filters';
import { parsePage, type Page } from '../http/pagination';
import type { ConsoleSession } from '../services/merchants/console-sessions';
import { html, type Child, type Html } from './html';
import { htmlResponse } from './http';
import {
  anyFilter,
  dateRangeInputs,
  filterForm,
  input,
  layout,
  pager,
  queryValues,
  sectionFrame,
  select,
  table,
  type Frame,
  type Values,
} from './layout';
import { nonEmptyQuery } from './pages/common';

/** A choice of a select: the value sent and the text shown. */
type Choice = readonly [value: string, label: string];

/** A field of a list's filter form, named as the filter of the service's schema it sets. */
type FilterField =
  | {
      kind: 'select';
      name: string;
      label: string;
      /** Fixed choices, or choices read for the session (loaded with the rows). */
      choices: readonly Choice[] | ((session: ConsoleSession) => Promise<readonly Choice[]>);
    }
  | { kind: 'text'; name: string; label: string; options: { inputmode?: string; placeholder?: string } }
  | { kind: 'dates'; fields: readonly ('created' | 'modified')[] };

/** A select of `choices`, with "Any" first (no filter). */
export const selectFilter = (
  name: string,
  label: string,
  choices: Extract<FilterField, { kind: 'select' }>['choices'],
): FilterField => ({ kind: 'select', name, label, choices });

/** A text input. */
export const textFilter = (
  name: string,
  label: string,
  options: { inputmode?: string; placeholder?: string } = {},
): FilterField => ({ kind: 'text', name, label, options });

/** The `<field>_after` and `<field>_before` inputs of each date field. */
export const dateFilters = (...fields: ('created' | 'modified')[]): FilterField => ({ kind: 'dates', fields });

/** Values as choices, each shown as `label` makes it (as it is, unless told). */
export const choicesOf = (values: readonly string[], label = (value: string) => value): Choice[] =>
  values.map((value) => [value, label(value)] as const);

/** A status or state as people read it: `in_progress` is shown `in progress`. */
export const spaced = (value: string): string => value.replaceAll('_', ' ');

/** The query names a field sets: `anyFilter` opens the form when one of them is given. */
const namesOf = (field: FilterField): string[] =>
  field.kind === 'dates' ? field.fields.flatMap((name) => [`${name}_after`, `${name}_before`]) : [field.name];

function filterInput(field: FilterField, values: Values, choices: readonly Choice[] | undefined): Html {
  if (field.kind === 'dates') return dateRangeInputs(values, field.fields);
  if (field.kind === 'text') return input(field.name, field.label, values, {}, field.options);
  return select(field.name, field.label, choices ?? [], values, {}, true);
}

/** A column of a list: its heading and what a row shows in its cell. */
export type Column<Row> = readonly [heading: string, cell: (row: Row, session: ConsoleSession) => Child];

/** What the parts of a page around its list are drawn from. */
export type ListView<State> = {
  session: ConsoleSession;
  /** What a refused form left to show again (its values and errors), or what the route read (a `done` notice). */
  state: State;
  status: number;
  /** The query without its blank values. */
  searchParams: URLSearchParams;
};

type Loader<Filters, Row> =
  | {
      /** One page of the rows that match the filters, and how many match in all. */
      page: (session: ConsoleSession, filters: Filters, page: Page) => Promise<{ count: number; rows: readonly Row[] }>;
      all?: never;
    }
  | {
      /** Every row of a list short enough to show whole (no pager, no query read). */
      all: (session: ConsoleSession) => Promise<readonly Row[]>;
      page?: never;
    };

export type ListPage<Filters, Row, State> = Loader<Filters, Row> & {
  path: string;
  section: Frame['section'];
  title: string;
  filters?: { schema: v.GenericSchema<unknown, Filters>; fields: readonly FilterField[] };
  columns: readonly Column<Row>[];
  /** What the page says when no row matches. */
  empty: string;
  /** Shown above the filter form (links, notices, an introduction). */
  above?: (view: ListView<State>) => Child | Promise<Child>;
  /** Shown below the list (forms, notes). */
  below?: (view: ListView<State>) => Child | Promise<Child>;
};

type PageContext = { request: Request; session: ConsoleSession };

/**
 * The function that answers a list page: `(context)` for the GET, `(context, state, status)` to show it again
 * with a refused form's values and errors.
 */
export function listPage<Filters, Row, State = void>(
  config: Pick<Config, 'sandbox' | 'pageSizeMax'>,
  spec: ListPage<Filters, Row, State>,
): (context: PageContext, state: State, status?: number) => Promise<Response> {
  const frame = sectionFrame(config.sandbox, spec.section);
  const fields = spec.filters?.fields ?? [];
  const filterNames = fields.flatMap(namesOf);
  const headings = spec.columns.map(([heading]) => heading);

  return async ({ request, session }, state, status = 200) => {
    const searchParams = nonEmptyQuery(request);
    const view: ListView<State> = { session, state, status, searchParams };
    // Paging is read before the filters: a query wrong in both is refused for its paging.
    const page = spec.page ? parsePage(searchParams, config.pageSizeMax) : undefined;
    const filters = spec.filters ? parseFilters(spec.filters.schema, searchParams) : ({} as Filters);
    const [listed, choices, above, below] = await Promise.all([
      page && spec.page ? spec.page(session, filters, page) : spec.all!(session).then((rows) => ({ count: 0, rows })),
      Promise.all(fields.map((field) => (field.kind === 'select' ? choicesFor(field.choices, session) : undefined))),
      spec.above?.(view),
      spec.below?.(view),
    ]);
    const values = queryValues(searchParams);
    const parts: Child[] = [
      spec.filters
        ? filterForm(
            spec.path,
            html`${fields.map((field, index) => html`\n${filterInput(field, values, choices[index])}`)}`,
            anyFilter(searchParams, filterNames),
          )
        : undefined,
      table(
        headings,
        listed.rows.map((row) => spec.columns.map(([, cell]) => cell(row, session))),
        spec.empty,
      ),
      page ? pager(spec.path, searchParams, page, listed.count) : undefined,
    ].filter((part) => part !== undefined);
    if (spec.below) parts.push(below);
    const content = html`${above}${parts.map((part) => html`\n${part}`)}`;
    return htmlResponse(layout(frame(session, spec.title), content), status);
  };
}

const choicesFor = async (
  choices: Extract<FilterField, { kind: 'select' }>['choices'],
  session: ConsoleSession,
): Promise<readonly Choice[]> => (typeof choices === 'function' ? await choices(session) : choices);
