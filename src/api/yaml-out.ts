/**
 * YAML text for every reader. The `yaml` package writes YAML 1.2, where `yes`, `on`, `y`,
 * `1_000` or `2001-12-14` are plain strings; YAML 1.1 parsers (PyYAML, go-yaml v2 and the
 * tools built on them) read those as booleans, numbers and dates, and a document read that
 * way cannot be written back. So every string such a parser would read as another type is
 * written quoted, wherever it stands (value, key, list entry).
 *
 * Characters that YAML readers refuse or read as line breaks are escaped: a string holding a
 * tab, a carriage return, DEL, a C1 control (NEL U+0085 among them), U+2028, U+2029, U+FEFF,
 * U+FFFE or U+FFFF is written double-quoted, where the first two are escaped by the `yaml`
 * package and the others, which it writes raw (PyYAML then refuses the document or breaks the
 * line), by `escapeRaw` below.
 */
import { Document, visit } from 'yaml';

/**
 * The implicit types of YAML 1.1 (yaml.org/type), widened to what PyYAML and go-yaml v2
 * resolve: go-yaml v2 also reads Go number syntax (`0o17`, `0x_1f`) and dates with one-digit
 * month or day; PyYAML reads `=` as the value type, which it cannot construct. A string
 * matched here may be quoted without need; one not matched is a string for every reader.
 */
const otherType = new RegExp(
  '^(?:' +
    [
      // booleans
      'y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF',
      // null
      '~|null|Null|NULL|',
      // integers: binary, octal (0 and 0o), hex, decimal and sexagesimal, with underscores
      '[-+]?(?:0[bB][01_]+|0[oO]?[0-7_]+|0[xX][0-9a-fA-F_]+|[0-9][0-9_]*(?::[0-5]?[0-9])*)',
      // floats, sexagesimal floats, infinities and not-a-number
      '[-+]?(?:[0-9][0-9_]*(?::[0-5]?[0-9])*\\.[0-9_]*(?:[eE][-+]?[0-9]+)?|\\.[0-9_]+(?:[eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+)',
      '[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN)',
      // timestamps (a date, optionally followed by a time)
      '[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \\t]+).*)?',
      // merge key and value key
      '<<|=',
    ].join('|') +
    ')$',
  's',
);

/** True when a YAML 1.1 reader would not read `s`, written plain, as the string `s`. */
export function readAsOtherType(s: string): boolean {
  return otherType.test(s);
}

/** Characters a string cannot hold raw in YAML output (see above); `t` and `r` are escaped by `yaml`. */
const needsEscape = /[\t\r\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]/;
const rawInQuotes = /[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]/g;

function escapeOf(ch: string): string {
  const code = ch.charCodeAt(0);
  if (code === 0x85) return '\\N';
  if (code === 0x2028) return '\\L';
  if (code === 0x2029) return '\\P';
  return code < 0x100 ? `\\x${code.toString(16)}` : `\\u${code.toString(16)}`;
}

/**
 * Every string holding one of `rawInQuotes` is double-quoted (toYaml), so each such character
 * in the text stands inside double quotes, where its escape means it.
 */
function escapeRaw(text: string): string {
  return text.replace(rawInQuotes, escapeOf);
}

/** One YAML document (no leading `---`), strings quoted where a YAML reader needs it. */
export function toYaml(value: unknown): string {
  const doc = new Document(value);
  let raw = false;
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string') return;
      if (needsEscape.test(node.value)) {
        node.type = 'QUOTE_DOUBLE';
        raw = true;
      } else if (readAsOtherType(node.value)) node.type = 'QUOTE_DOUBLE';
    },
  });
  const text = doc.toString({ lineWidth: 0 });
  return raw ? escapeRaw(text) : text;
}
