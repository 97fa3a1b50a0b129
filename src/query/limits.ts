/**
 * How deep a client's expressions may nest (CONTRACT §5: every nesting a client can send has a
 * documented limit and answers 400 `too-deep` beyond it, never 500). The parsers and compilers
 * of `where`, label expressions and templates recurse once per level; these limits keep that
 * far inside the stack. README "Limits" and docs/ERRORS.md document them.
 */

/** `where` and `fields`: levels of the expression's tree. */
export const MAX_EXPRESSION_DEPTH = 128;

/** Label expressions (`match-site-labels`, `match-labels()`): `not` and parentheses. */
export const MAX_LABEL_DEPTH = 64;
