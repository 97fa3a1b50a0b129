/** `ctl get -o table`: one readable line a row, a long text (a PEM, a template) cut; yaml and json show it whole. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { render } from '../../src/cli/output.js';

const pem = `-----BEGIN CERTIFICATE-----\n${'MIIB'.repeat(400)}\n-----END CERTIFICATE-----\n`;
const rows = [
  { name: 'w1', 'ca-cert': pem, url: 'http://127.0.0.1:9/a' },
  { name: 'w2', url: 'http://127.0.0.1:9/b' },
];

test('a table cuts a long text to 60 characters, so a row stays one line', () => {
  const lines = render(rows, 'table').trimEnd().split('\n');
  assert.is(lines.length, 3);
  assert.match(lines[0]!, /^NAME\s+CA-CERT\s+URL$/);
  assert.match(lines[1]!, /^w1\s+-----BEGIN CERTIFICATE----- MIIB\S*\.\.\.\s+http:\/\/127\.0\.0\.1:9\/a$/);
  assert.ok(
    lines.every((l) => l.length < 120),
    lines.join('\n'),
  );
});

test('yaml and json show the text whole', () => {
  assert.ok(render(rows, 'json').includes('MIIB'.repeat(400)));
  assert.ok(render(rows, 'yaml').includes('MIIB'.repeat(100)));
});

test.run();
