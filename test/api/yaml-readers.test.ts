/**
 * YAML output is readable by YAML 1.1 parsers too (PyYAML, go-yaml v2): every string such a
 * parser would read as another type (boolean, null, number, date, merge key) is quoted, as a
 * value, as a key and in a list, so a document read and written back keeps its strings.
 * Checked by parsing the output in YAML 1.1 mode, over a table and in real API responses.
 */
import { suite, test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse, parseAllDocuments } from 'yaml';
import { encode } from '../../src/api/reply.js';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';

// Strings a YAML 1.1 reader (the spec's types, PyYAML, go-yaml v2) does not read as strings.
const otherTypes = [
  ...['yes', 'Yes', 'YES', 'no', 'No', 'NO', 'on', 'On', 'ON', 'off', 'Off', 'OFF'],
  ...['y', 'Y', 'n', 'N', 'true', 'True', 'TRUE', 'false', 'False', 'FALSE'],
  ...['~', 'null', 'Null', 'NULL', ''],
  ...['0', '-1', '+1', '017', '0o17', '0O17', '0x1F', '0b101', '-0b101', '1_000', '0x_1f', '1:20', '-1:20:30'],
  ...['1.5', '1.', '.5', '._5', '1_0.5', '1e3', '1.5e-3', '1:20.5', '.inf', '-.Inf', '+.INF', '.nan', '.NaN'],
  ...['2001-12-14', '2001-1-2', '2001-12-14t21:59:43.10-05:00', '2001-12-14 21:59:43.10 -5', '2001-12-14T21:59:43Z'],
  ...['<<', '='],
];
// Strings go-yaml v2 reads as numbers or dates where the `yaml` package's 1.1 mode does not:
// the output must show them quoted.
const goYamlOnly = ['0o17', '0O17', '2001-1-2', '._5', '='];
// Plain words and versions stay as they are (no quotes where none is needed).
const plain = ['hello', 'edge', 'web-1', 'yesterday', 'nothing', 'onboard', '1.2.3', '10.0.0.0/8', 'x=1'];

test('every string of the table survives a YAML 1.1 reader: as value, key and list entry', () => {
  for (const s of [...otherTypes, ...plain]) {
    const value = { v: s, labels: { [s]: s }, list: [s] };
    const text = encode(value, 'yaml');
    assert.equal(parse(text, { version: '1.1' }), value, `YAML 1.1 reads ${JSON.stringify(s)} back from:\n${text}`);
    assert.equal(parse(text), value, `YAML 1.2 reads ${JSON.stringify(s)} back from:\n${text}`);
  }
});

test('strings only go-yaml v2 reads as another type are quoted too', () => {
  for (const s of goYamlOnly) {
    const text = encode({ v: s }, 'yaml');
    assert.ok(text === `v: "${s}"\n` || text === `v: '${s}'\n`, `${JSON.stringify(s)} is written ${text}`);
  }
});

test('plain strings stay unquoted; numbers, booleans and null keep their types', () => {
  for (const s of plain) assert.is(encode({ v: s }, 'yaml'), `v: ${s}\n`);
  assert.is(encode({ a: 1, b: true, c: null, d: 1.5 }, 'yaml'), 'a: 1\nb: true\nc: null\nd: 1.5\n');
});

test('multi-object output (documents) is quoted the same way', () => {
  const text = encode([{ v: 'yes' }, { v: 'off' }], 'yaml', true);
  const docs = parseAllDocuments(text).map((d) => d.toJS({}) as unknown);
  assert.equal(docs, [{ v: 'yes' }, { v: 'off' }]);
  for (const d of parseAllDocuments(text, { version: '1.1' })) assert.type((d.toJS() as { v: unknown }).v, 'string');
});

function apiSuite(backend: Backend): void {
  const t = suite(`yaml-readers API (${backend})`);
  const api = useApi(t, backend, { db: 6 });

  t('GET in YAML reads back in YAML 1.1 mode as the JSON reply, single, list and /v1/config', async () => {
    const site = {
      name: 'y1',
      description: 'no',
      labels: { on: 'yes', y: 'n', version: '1.20', since: '2024-01-02', port: '0o17', count: '1_000', at: '1:20' },
      hosts: [{ 'host-id': 'off', labels: { '~': '.inf' } }],
    };
    const put = await api.json('PUT', '/v1/config/sites/y1', { body: site });
    assert.is(put.status, 201, JSON.stringify(put.body));
    for (const path of ['/v1/config/sites/y1', '/v1/config/sites', '/v1/config', '/v1/state/sites/y1']) {
      const json = (await api.json('GET', path)).body;
      const res = await api.req('GET', path, { headers: { accept: 'application/yaml' } });
      assert.is(res.status, 200, path);
      const text = await res.text();
      const docs = parseAllDocuments(text, { version: '1.1' }).map((d) => d.toJS() as unknown);
      // A multi-object result is one document per object; any other is one document.
      const read = Array.isArray(json) && !Array.isArray(docs[0]) ? docs : docs[0];
      assert.equal(read, json, `${path} in YAML 1.1:\n${text}`);
    }
  });

  t('a YAML document read in 1.1 mode can be written back unchanged', async () => {
    const res = await api.req('GET', '/v1/config/sites/y1', { headers: { accept: 'application/yaml' } });
    const etag = res.headers.get('etag');
    const back = parse(await res.text(), { version: '1.1' }) as Record<string, unknown>;
    const put = await api.json('PUT', '/v1/config/sites/y1', { body: back });
    assert.is(put.status, 204, JSON.stringify(put.body));
    assert.is((await api.req('GET', '/v1/config/sites/y1')).headers.get('etag'), etag);
  });

  t.run();
}

test.run();
forEachBackend(apiSuite);
