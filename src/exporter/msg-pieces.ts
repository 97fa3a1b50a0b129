/**
 * MSG's text in pieces, for `Message.includes` (message.ts): the stamp
 * (`{"time":…,"remain":…`), the members' tail (the optional members and `,"payload":`), the
 * payload and `}`. What a literal filter string needs to be looked for in them without making
 * the text: whether it can reach into a plain stamp (then the text is searched), and its plan
 * against the members' tail of the last producer.
 */

/** MSG's members taken from entry fields of the same name when present, in MSG's order. */
export const optionalFields = ['producer-name', 'host', 'origin'] as const;

/** The last mtime whose ISO text has a four-digit year (9999-12-31T23:59:59.999Z). */
export const maxPlainMtime = 253_402_300_799_999;

/** Whether an entry id is `<digits>-<digits>`. */
export function digitsDashDigits(id: string): boolean {
  let dash = -1;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c === 45 && dash < 0 && i > 0) dash = i;
    else if (c < 48 || c > 57) return false;
  }
  return dash > 0 && dash < id.length - 1;
}

/**
 * A plain stamp with every run of digits written as one `#`: the stamp of any message whose
 * `plainStamp` holds reads so once its digit runs are collapsed the same way.
 */
const stampShape = '{"time":"#-#-#T#:#:#.#Z","mtime":#,"seqno":"#-#","remain":#';

const collapseDigits = (s: string): string => s.replace(/[0-9]+/g, '#');

/**
 * What a literal filter string needs to be looked for without MSG's text. `nearStamp`: it may
 * occur within a plain stamp or start in one (collapsed, it is in `stampShape`, or one of its
 * prefixes ends it: an occurrence in a text maps onto one in the collapsed texts); such strings
 * are looked for in the text. `beforeBrace`: when it ends with `}`, what precedes that brace
 * (an occurrence across the payload's end).
 */
type Needle = { nearStamp: boolean; beforeBrace: string | undefined };
const needles = new Map<string, Needle>();

export function needleOf(s: string): Needle {
  let n = needles.get(s);
  if (n) return n;
  const c = collapseDigits(s);
  let nearStamp = stampShape.includes(c);
  for (let k = 1; k < s.length && !nearStamp; k++) nearStamp = stampShape.endsWith(collapseDigits(s.slice(0, k)));
  n = { nearStamp, beforeBrace: s.endsWith('}') ? s.slice(0, -1) : undefined };
  // Filter strings come from configuration: a few; bounded all the same.
  if (needles.size >= 10_000) needles.clear();
  needles.set(s, n);
  return n;
}

/**
 * MSG's optional members and `,"payload":`, the text between the stamp and the payload: the same
 * for the messages of one producer, so the last one is kept.
 */
let lastTail = ',"payload":';
let lastTailFields: Array<string | undefined> = [undefined, undefined, undefined];

export function membersTail(f: Readonly<Record<string, string>>): string {
  const a = f['producer-name'];
  const b = f.host;
  const c = f.origin;
  const last = lastTailFields;
  if (a === last[0] && b === last[1] && c === last[2]) return lastTail;
  let t = '';
  for (const k of optionalFields) {
    const v = f[k];
    if (v !== undefined) t += `,"${k}":${JSON.stringify(v)}`;
  }
  lastTailFields = [a, b, c];
  lastTail = `${t},"payload":`;
  tailPlans.clear();
  return lastTail;
}

/**
 * A filter string against the last members' tail: whether it is within the tail, and for each
 * way it can start in the tail and run on into the payload, the part the payload must start with.
 */
type TailPlan = { within: boolean; rests: string[] };
const tailPlans = new Map<string, TailPlan>();

export function tailPlanOf(tail: string, s: string): TailPlan {
  let p = tailPlans.get(s);
  if (p) return p;
  const rests: string[] = [];
  for (let k = 1; k < s.length; k++) if (tail.endsWith(s.slice(0, k))) rests.push(s.slice(k));
  p = { within: tail.includes(s), rests };
  if (tailPlans.size >= 10_000) tailPlans.clear();
  tailPlans.set(s, p);
  return p;
}
