/**
 * Message filters of a webhook exporter: applied to the JSON text of MSG (substrings and literal
 * patterns are asked of the message, which then need not make its text). A message is included
 * when it matches every `match-re`, contains every `match-string`, matches no `no-match-re` and
 * contains no `no-match-string`. Regexes are compiled here, once, when the configuration is
 * written; `test` runs per message.
 */
import { compileRegex, type Regex } from '../../lib/regex.js';

export type FilterConfig = {
  'match-re'?: readonly string[];
  'match-string'?: readonly string[];
  'no-match-re'?: readonly string[];
  'no-match-string'?: readonly string[];
};

/**
 * What the filters read: MSG's text, and whether it contains a string (a message tells that
 * without making its text: exporter/message.ts `includes`).
 */
export type FilterSubject = { readonly text: string; includes(s: string): boolean };

/** A text as a subject of the filters. */
export const textSubject = (text: string): FilterSubject => ({ text, includes: (s) => text.includes(s) });

export type MessageFilter = {
  /** True when no filter is configured: every message passes, callers may skip serialising MSG. */
  readonly passAll: boolean;
  test(msg: FilterSubject): boolean;
};

const passAll: MessageFilter = { passAll: true, test: () => true };

/** A compiled pattern as a test of a subject: a literal one is a substring search. */
function patternTest(re: Regex): (msg: FilterSubject) => boolean {
  const source = re.source;
  return re.literal ? (msg) => msg.includes(source) : (msg) => re.test(msg.text);
}

export function compileFilters(cfg: FilterConfig): MessageFilter {
  const mustContain = cfg['match-string'] ?? [];
  const mustNotContain = cfg['no-match-string'] ?? [];
  // compileRegex throws a 400 naming `match-re[1]` and the position in that pattern.
  const mustMatch = (cfg['match-re'] ?? []).map((p, i) => patternTest(compileRegex(p, `match-re[${i}]`)));
  const mustNotMatch = (cfg['no-match-re'] ?? []).map((p, i) => patternTest(compileRegex(p, `no-match-re[${i}]`)));
  if (mustContain.length + mustNotContain.length + mustMatch.length + mustNotMatch.length === 0) return passAll;

  // Substring checks first: they are cheaper than any regex and often decide alone.
  return {
    passAll: false,
    test(msg) {
      for (const s of mustContain) if (!msg.includes(s)) return false;
      for (const s of mustNotContain) if (msg.includes(s)) return false;
      for (const t of mustMatch) if (!t(msg)) return false;
      for (const t of mustNotMatch) if (t(msg)) return false;
      return true;
    },
  };
}
