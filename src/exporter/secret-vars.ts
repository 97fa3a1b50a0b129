/**
 * Secret variables (`value-from-vault-secret`) are read when an exporter starts or restarts
 * and again after any change under strongbox (the supervisor updates the running exporter's
 * values in place), never per message; a sealed store or a missing vault, secret or key makes the exporter
 * status `error` with a last-error that names the variable (never the value).
 */
import type { SecretVar } from '../resources/webhook/spec.js';
import { errorText } from '../lib/error-text.js';

/** Injected by the caller (the secret store); values are plaintext. */
export type SecretReader = {
  /**
   * The secret of `vault` seen from `tenant` (the exporter's owner). With `fromTenant`, the
   * reader decides whether that tenant shares the vault with the owner (only a direct parent
   * that lists it in shared-vaults does) and refuses otherwise.
   */
  read(tenant: string, vault: string, secret: string, fromTenant?: string): Promise<Record<string, string>>;
  sealed(): boolean;
};

export type SecretsResult = { ok: true; values: Map<string, string> } | { ok: false; error: string };

export async function readSecretVars(
  reader: SecretReader | undefined,
  vars: readonly SecretVar[],
): Promise<SecretsResult> {
  const values = new Map<string, string>();
  if (vars.length === 0) return { ok: true, values };
  if (!reader) return { ok: false, error: 'no secret store is available for value-from-vault-secret variables' };
  if (reader.sealed())
    return {
      ok: false,
      error: 'the secret store is sealed: POST /v1/strongbox/unseal (the exporter tries again every 5 s)',
    };
  const cache = new Map<string, Promise<Record<string, string>>>();
  for (const v of vars) {
    const id = `${v.tenant}\0${v.fromTenant ?? ''}\0${v.vault}\0${v.secret}`;
    let p = cache.get(id);
    if (!p) {
      p = reader.read(v.tenant, v.vault, v.secret, v.fromTenant);
      cache.set(id, p);
    }
    // The field's own secrets (signing, client-certificate, oauth2) have names with a dot, which
    // no variable has: the error names the field.
    const who = v.name.includes('.') ? v.name.slice(0, v.name.indexOf('.')) : `variable ${v.name}`;
    let dict: Record<string, string>;
    try {
      dict = await p;
    } catch (err) {
      const why = errorText(err);
      return {
        ok: false,
        error: `${who}: cannot read secret ${v.secret} of vault ${v.vault} (tenant ${v.fromTenant ?? v.tenant}): ${why}`,
      };
    }
    const value = dict[v.key];
    if (value === undefined)
      return { ok: false, error: `${who}: secret ${v.secret} of vault ${v.vault} has no key ${v.key}` };
    values.set(v.name, value);
  }
  return { ok: true, values };
}
