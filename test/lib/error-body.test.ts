/**
 * The error body as CONTRACT §5 pins it: `error-info` is the code as a string (the specific code,
 * else the general one), and what else a client may use goes in `error-details`, omitted when
 * there is nothing to say. Every entry of a combined error has the same shape.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError, combine } from '../../src/lib/errors.js';

test('error-info is the specific code; the rest of the detail is error-details', () => {
  const e = new ApiError('invalid-query', 'Cannot parse where', { code: 'syntax', parameter: 'where', position: 7 });
  assert.equal(e.toBody(), {
    errors: [
      {
        'error-message': 'Cannot parse where',
        'error-info': 'syntax',
        'error-details': { parameter: 'where', position: 7 },
      },
    ],
  });
});

test('without a specific code, error-info is the general code; no details, no error-details', () => {
  assert.equal(new ApiError('internal', 'boom').toBody(), {
    errors: [{ 'error-message': 'boom', 'error-info': 'internal' }],
  });
  assert.equal(new ApiError('not-found', 'gone', { code: 'missing' }).toBody(), {
    errors: [{ 'error-message': 'gone', 'error-info': 'missing' }],
  });
  assert.equal(new ApiError('bad-request', 'where', { path: '/a' }).toBody(), {
    errors: [{ 'error-message': 'where', 'error-info': 'bad-request', 'error-details': { path: '/a' } }],
  });
});

test('a combined error lists each problem in the same shape', () => {
  const all = combine([
    new ApiError('invalid-value', 'one', { code: 'schema-type', path: '/a' }),
    new ApiError('invalid-value', 'two', { code: 'schema-required', path: '/b' }),
  ]);
  assert.equal(
    all.toBody().errors.map((e) => [e['error-info'], e['error-details']]),
    [
      ['schema-type', { path: '/a' }],
      ['schema-required', { path: '/b' }],
    ],
  );
});

test.run();
