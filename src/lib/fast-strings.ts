/**
 * Keeps String.prototype in V8's fast mode: imported first by the entry (worker.ts), before any
 * module that loads node-redis. Node-redis defines `class VerbatimString extends String`; in
 * Node 20's V8, making String.prototype the prototype of a new class turns its properties into
 * a dictionary for good, and from then on every string method that optimised code looks up
 * (charCodeAt, slice, indexOf, startsWith...) is a generic lookup: in the bundle a loop of
 * charCodeAt took 10 ns a character instead of 2, in every module of the process (the
 * exporter's per-message string work, node-redis's and undici's parsers).
 *
 * V8 turns a prototype into a dictionary only while it is not marked as one that should stay
 * fast; reading a property through it at one place with receivers of several shapes marks it
 * (the second miss of a property load makes the prototypes of its receiver fast). String
 * wrapper objects of three shapes do it without making any other object a prototype.
 */

function readThrough(o: object): unknown {
  return (o as { charCodeAt?: unknown }).charCodeAt;
}

/** Reads a String method through wrapper objects of three shapes, twice each. */
function keepStringPrototypeFast(): number {
  // Shapes made by plain stores: Object.assign onto a String wrapper itself makes String.prototype a dictionary.
  const shapes: Array<String & { x?: number; y?: number }> = [new String('a'), new String('b'), new String('c')];
  shapes[1]!.x = 1;
  shapes[2]!.y = 1;
  let found = 0;
  for (let round = 0; round < 2; round++) for (const s of shapes) if (readThrough(s) !== undefined) found++;
  return found;
}

keepStringPrototypeFast();
