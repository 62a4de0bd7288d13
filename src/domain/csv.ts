/**
 * CSV as the service reads and writes it: uploads and statements read into records (a BOM, CRLF
 * line ends and quoted cells taken), and a merchant's or subscriber's text written as a cell a
 * spreadsheet shows as text.
 */
import { parse } from 'csv-parse/sync';
import { RefusedError } from './errors';

/**
 * A CSV that cannot be read as records: what is wrong with it, refused with a 400 (or a usage error) wherever it is
 * read.
 */
export class UnreadableCsvError extends RefusedError {}

/**
 * The file's records, cells trimmed, empty lines skipped. `ragged` takes records of different
 * lengths and stray quotes (a statement's descriptive lines before its header row) and keeps empty
 * lines as empty records, so a record's index is its line's.
 */
export function csvRecords(text: string, options: { ragged?: boolean } = {}): string[][] {
  const ragged = options.ragged ?? false;
  try {
    return parse(text, {
      bom: true,
      skip_empty_lines: !ragged,
      trim: true,
      relax_column_count: ragged,
      relax_quotes: ragged,
    });
  } catch (cause) {
    throw new UnreadableCsvError(`The CSV cannot be read: ${(cause as Error).message}`, { cause });
  }
}

/**
 * Text as a CSV cell a spreadsheet shows as text: one that starts like a formula (`=`, `+`, `-`,
 * `@`, a tab or a carriage return) gets a leading apostrophe (CSV injection).
 */
export const textCell = (text: string): string => (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text);
