/** lib/error-text.ts: the one way a thrown value becomes text for logs, states and messages. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../../src/lib/errors.js';
import { errorChainText, errorText } from '../../src/lib/error-text.js';

test('an Error gives its message; anything else thrown, its String()', () => {
  assert.is(errorText(new Error('boom')), 'boom');
  assert.is(errorText('plain'), 'plain');
  assert.is(errorText(42), '42');
  assert.is(errorText(undefined), 'undefined');
});

test('a system code the message does not name goes in front; our own lower-case codes do not', () => {
  const refused = Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' });
  assert.is(errorText(refused), 'ECONNREFUSED: AggregateError');
  const named = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  assert.is(errorText(named), 'connect ECONNREFUSED 127.0.0.1:1');
  const undici = Object.assign(new Error('Connect Timeout Error'), { code: 'UND_ERR_CONNECT_TIMEOUT' });
  assert.is(errorText(undici), 'UND_ERR_CONNECT_TIMEOUT: Connect Timeout Error');
  assert.is(
    errorText(new ApiError('unavailable', 'The store is unavailable', { code: 'store-unavailable' })),
    'The store is unavailable',
  );
});

test('the chain: an error and its causes, at most 4 deep', () => {
  const inner = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  assert.is(
    errorChainText(new TypeError('fetch failed', { cause: inner })),
    'fetch failed: DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate',
  );
  let deep: unknown = 'root';
  for (let i = 0; i < 6; i++) deep = new Error(`e${i}`, { cause: deep });
  assert.is(errorChainText(deep), 'e5: e4: e3: e2');
  assert.is(errorChainText('just text'), 'just text');
});

test.run();
