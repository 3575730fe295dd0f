// Subject rules of the NATS protocol. The parser already splits on whitespace, so a subject that
// reaches these functions never contains a space, tab, CR or LF.

const DOT = 0x2e;
const STAR = 0x2a;
const GT = 0x3e;

/**
 * A subscription subject: non-empty tokens separated by dots; `>` only as the last token.
 * Pedantic clients also may not use `*` or `>` inside a longer token ("foo*").
 */
export function isValidSubscribeSubject(subject: string, pedantic: boolean): boolean {
  const n = subject.length;
  if (n === 0) return false;
  let tokenStart = 0;
  for (let i = 0; i <= n; i++) {
    if (i < n && subject.charCodeAt(i) !== DOT) continue;
    const len = i - tokenStart;
    if (len === 0) return false;
    if (len === 1) {
      if (subject.charCodeAt(tokenStart) === GT && i !== n) return false;
    } else if (pedantic) {
      for (let j = tokenStart; j < i; j++) {
        const c = subject.charCodeAt(j);
        if (c === STAR || c === GT) return false;
      }
    }
    tokenStart = i + 1;
  }
  return true;
}

/** A subject without empty tokens (the minimum for a publish or reply subject). */
export function isWellFormedSubject(subject: string): boolean {
  const n = subject.length;
  if (n === 0 || subject.charCodeAt(0) === DOT || subject.charCodeAt(n - 1) === DOT) return false;
  return !subject.includes("..");
}

/** True when the subject has a `*` or `>` token, which a pedantic client may not publish to. */
export function hasWildcardToken(subject: string): boolean {
  const n = subject.length;
  let tokenStart = 0;
  for (let i = 0; i <= n; i++) {
    if (i < n && subject.charCodeAt(i) !== DOT) continue;
    if (i - tokenStart === 1) {
      const c = subject.charCodeAt(tokenStart);
      if (c === STAR || c === GT) return true;
    }
    tokenStart = i + 1;
  }
  return false;
}

/**
 * Whether a literal subject is matched by a subscription pattern. Scans both strings in place
 * rather than splitting them, because the sublist calls it for every cache entry on invalidation.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  const pn = pattern.length;
  const sn = subject.length;
  let p = 0;
  let s = 0;
  for (;;) {
    let pe = pattern.indexOf(".", p);
    if (pe < 0) pe = pn;
    let se = subject.indexOf(".", s);
    if (se < 0) se = sn;
    const pLen = pe - p;
    if (pLen === 1 && pattern.charCodeAt(p) === GT) return s < sn;
    if (pLen !== 1 || pattern.charCodeAt(p) !== STAR) {
      if (pLen !== se - s) return false;
      for (let i = 0; i < pLen; i++) {
        if (pattern.charCodeAt(p + i) !== subject.charCodeAt(s + i)) return false;
      }
    }
    const patternDone = pe >= pn;
    const subjectDone = se >= sn;
    if (patternDone || subjectDone) return patternDone && subjectDone;
    p = pe + 1;
    s = se + 1;
  }
}
