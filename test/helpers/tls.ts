/**
 * A throw-away CA and a server certificate, made with the `openssl` CLI at test time in a
 * temporary directory. The server certificate names `webhook.test`, `localhost` and
 * 127.0.0.1, so an SNI of `webhook.test` passes and any other name fails.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type TestCerts = { caCert: string; cert: string; key: string; serverName: string; dir: string };

export function makeCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-tls-'));
  const p = (f: string) => join(dir, f);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    p('ca.key'),
    '-out',
    p('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=edgeplane test CA',
  );
  ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    p('server.key'),
    '-out',
    p('server.csr'),
    '-subj',
    '/CN=webhook.test',
  );
  writeFileSync(
    p('ext.cnf'),
    'subjectAltName=DNS:webhook.test,DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n',
  );
  ssl(
    'x509',
    '-req',
    '-in',
    p('server.csr'),
    '-CA',
    p('ca.pem'),
    '-CAkey',
    p('ca.key'),
    '-CAcreateserial',
    '-out',
    p('server.pem'),
    '-days',
    '2',
    '-extfile',
    p('ext.cnf'),
  );
  return {
    caCert: readFileSync(p('ca.pem'), 'utf8'),
    cert: readFileSync(p('server.pem'), 'utf8'),
    key: readFileSync(p('server.key'), 'utf8'),
    serverName: 'webhook.test',
    dir,
  };
}

let clients = 0;

/** A client certificate with this CN, signed by the CA of `certs` (mutual TLS). */
export function makeClientCert(certs: TestCerts, cn: string): { cert: string; key: string } {
  const n = ++clients;
  const p = (f: string) => join(certs.dir, `client-${n}-${f}`);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', p('key.pem'), '-out', p('csr.pem'), '-subj', `/CN=${cn}`);
  writeFileSync(p('ext.cnf'), 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n');
  ssl(
    'x509',
    '-req',
    '-in',
    p('csr.pem'),
    '-CA',
    join(certs.dir, 'ca.pem'),
    '-CAkey',
    join(certs.dir, 'ca.key'),
    '-CAcreateserial',
    '-out',
    p('cert.pem'),
    '-days',
    '2',
    '-extfile',
    p('ext.cnf'),
  );
  return { cert: readFileSync(p('cert.pem'), 'utf8'), key: readFileSync(p('key.pem'), 'utf8') };
}
