/**
 * Message filters of a webhook exporter: applied to the JSON text of
 * MSG. A message is included when it matches every `match-re`, contains every `match-string`,
 * matches no `no-match-re` and contains no `no-match-string`. Regexes are compiled here, once,
 * when the configuration is written; `test` runs per message.
 */
import { compileRegex } from '../lib/regex.js';

export type FilterConfig = {
  'match-re'?: readonly string[];
  'match-string'?: readonly string[];
  'no-match-re'?: readonly string[];
  'no-match-string'?: readonly string[];
};

export type MessageFilter = {
  /** True when no filter is configured: every message passes, callers may skip serialising MSG. */
  readonly passAll: boolean;
  test(text: string): boolean;
};

const passAll: MessageFilter = { passAll: true, test: () => true };

export function compileFilters(cfg: FilterConfig): MessageFilter {
  const mustContain = cfg['match-string'] ?? [];
  const mustNotContain = cfg['no-match-string'] ?? [];
  // compileRegex throws a 400 naming `match-re[1]` and the position in that pattern.
  const mustMatch = (cfg['match-re'] ?? []).map((p, i) => compileRegex(p, `match-re[${i}]`));
  const mustNotMatch = (cfg['no-match-re'] ?? []).map((p, i) => compileRegex(p, `no-match-re[${i}]`));
  if (mustContain.length + mustNotContain.length + mustMatch.length + mustNotMatch.length === 0) return passAll;

  // Substring checks first: they are cheaper than any regex and often decide alone.
  return {
    passAll: false,
    test(text) {
      for (const s of mustContain) if (!text.includes(s)) return false;
      for (const s of mustNotContain) if (text.includes(s)) return false;
      for (const re of mustMatch) if (!re.test(text)) return false;
      for (const re of mustNotMatch) if (re.test(text)) return false;
      return true;
    },
  };
}
