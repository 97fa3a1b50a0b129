/**
 * YAML output is readable by YAML 1.1 parsers too (PyYAML, go-yaml v2): every string such a
 * parser would read as another type (boolean, null, number, date, merge key) is quoted, as a
 * value, as a key and in a list, so a document read and written back keeps its strings.
 * Checked by parsing the output in YAML 1.1 mode, over a table and in real API responses.
 */
import { suite, test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
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

// Characters YAML readers refuse raw or read as line breaks, each alone, inside, at either end
// and in a multi-line string; with the other printable oddities beside them.
const rawChars = ['\t', '\r', '\x7f', '\x80', '\x85', '\x9f', '\u2028', '\u2029', '\ufeff', '\ufffe', '\uffff'];
const probes = [
  ...rawChars.flatMap((c) => [c, `a${c}b`, `${c}a`, `a${c}`, `line1\nx${c}y\nline3`, `${c}${c}`]),
  ...['\x00', '\x1b', '\x0b', '\xa0', 'tab\there: x', ' lead', 'trail ', '#x', 'a: b', '- x', "'q'", '"d"', 'é ✓ 𝄞'],
];

/** PyYAML's reading of each text, when python3 with PyYAML is on this machine (else undefined). */
function pyyamlReads(texts: string[]): unknown[] | undefined {
  const script = [
    'import sys, json, yaml',
    'out = []',
    'for t in json.load(sys.stdin):',
    '    try: out.append({"ok": yaml.safe_load(t)})',
    '    except Exception as e: out.append({"error": str(e).splitlines()[0]})',
    'print(json.dumps(out))',
  ].join('\n');
  const r = spawnSync('python3', ['-c', script], { input: JSON.stringify(texts), encoding: 'utf8' });
  if (r.status !== 0) return undefined; // no python3, or no PyYAML
  return JSON.parse(r.stdout) as unknown[];
}

test('strings with tabs, DEL, C1 controls, NEL, U+2028/9, U+FEFF/FFFE/FFFF: every reader reads them back', () => {
  const values = probes.map((s) => ({ v: s, labels: { [s]: s }, list: [s] }));
  const texts = values.map((v) => encode(v, 'yaml'));
  texts.forEach((text, i) => {
    const value = values[i];
    assert.not.match(text, /[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\t\r]/, `raw in ${JSON.stringify(text)}`);
    assert.equal(parse(text, { version: '1.1' }), value, `YAML 1.1: ${JSON.stringify(text)}`);
    assert.equal(parse(text), value, `YAML 1.2: ${JSON.stringify(text)}`);
  });
  const py = pyyamlReads(texts);
  if (py) py.forEach((r, i) => assert.equal(r, { ok: values[i] }, `PyYAML: ${JSON.stringify(texts[i])}`));
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

  t('GET /v1/config in YAML stays readable with such characters stored (one value made it unreadable)', async () => {
    const labels = Object.fromEntries(rawChars.map((c, i) => [`k${i}`, `v${c}x`]));
    const put = await api.json('PUT', '/v1/config/sites/y2', {
      body: { name: 'y2', description: 'a\tb\u2028c', labels },
    });
    assert.is(put.status, 201, JSON.stringify(put.body));
    const json = (await api.json('GET', '/v1/config')).body;
    const text = await (await api.req('GET', '/v1/config', { headers: { accept: 'application/yaml' } })).text();
    for (const version of ['1.1', '1.2'] as const)
      assert.equal(
        parseAllDocuments(text, { version }).map((d) => d.toJS() as unknown),
        json,
        `YAML ${version}`,
      );
    const py = pyyamlReads([text.split(/^---\n/m).find((d) => d.includes('y2')) ?? '']);
    if (py) assert.equal((py[0] as { ok?: { labels?: unknown } }).ok?.labels, labels, 'PyYAML');
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
