/**
 * YAML text for every reader. The `yaml` package writes YAML 1.2, where `yes`, `on`, `y`,
 * `1_000` or `2001-12-14` are plain strings; YAML 1.1 parsers (PyYAML, go-yaml v2 and the
 * tools built on them) read those as booleans, numbers and dates, and a document read that
 * way cannot be written back. So every string such a parser would read as another type is
 * written quoted, wherever it stands (value, key, list entry).
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

/** One YAML document (no leading `---`), strings quoted where a YAML 1.1 reader needs it. */
export function toYaml(value: unknown): string {
  const doc = new Document(value);
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && readAsOtherType(node.value)) node.type = 'QUOTE_DOUBLE';
    },
  });
  return doc.toString({ lineWidth: 0 });
}
