/**
 * docs/ERRORS.md lists every code `error-info` can carry with its HTTP status, exactly as the
 * tables in src/lib/errors.ts do: a code added, removed or given another status in one place
 * fails here until the other place says the same.
 */
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { errorDetails, errorStatus, infoCodes } from '../../src/lib/errors.js';

const doc = readFileSync(new URL('../../docs/ERRORS.md', import.meta.url), 'utf8');
const rows = [...doc.matchAll(/^\| `([^`]+)` \| (\d{3}) \| (.*) \|$/gm)].map((m) => ({
  code: m[1] ?? '',
  status: Number(m[2]),
  meaning: (m[3] ?? '').trim(),
}));

test('docs/ERRORS.md has one row per code (general and specific), sorted, with the status of src/lib/errors.ts', () => {
  const documented = rows.map((r) => `${r.code} ${r.status}`);
  const coded = infoCodes.map(([code, status]) => `${code} ${status}`);
  assert.equal(documented, coded);
});

test('a code in both tables has one status', () => {
  for (const [code, status] of Object.entries(errorDetails))
    if (code in errorStatus) assert.is(errorStatus[code as keyof typeof errorStatus], status, code);
});

test('every documented code says what it means', () => {
  for (const r of rows) assert.ok(r.meaning.length > 10, `${r.code} has no meaning`);
});

test('every status in the table is the status of some ApiError code', () => {
  const statuses = new Set<number>(Object.values(errorStatus));
  for (const [code, status] of Object.entries(errorDetails)) assert.ok(statuses.has(status), `${code}: ${status}`);
});

test.run();
