// Relations between NATS subject patterns (tokens separated by dots, `*` one token, `>` the rest),
// which permission lists need beyond the literal match of nats/subject.ts.

function tokens(subject: string): string[] {
  return subject.split(".");
}

/** True when every subject `inner` can match is also matched by `outer` (e.g. `a.*` covers `a.b`). */
export function patternCovers(outer: string, inner: string): boolean {
  const o = tokens(outer);
  const i = tokens(inner);
  for (let k = 0; k < o.length; k++) {
    const ot = o[k];
    if (ot === ">") return k < i.length;
    if (k >= i.length) return false;
    const it = i[k];
    if (it === ">") return false;
    if (ot === "*") continue;
    if (it === "*" || it !== ot) return false;
  }
  return o.length === i.length;
}

/** True when some subject is matched by both patterns (e.g. `>` and `secret.x`). */
export function patternsOverlap(a: string, b: string): boolean {
  const x = tokens(a);
  const y = tokens(b);
  for (let k = 0; ; k++) {
    const xDone = k >= x.length;
    const yDone = k >= y.length;
    if (xDone || yDone) return xDone && yDone;
    const xt = x[k];
    const yt = y[k];
    if (xt === ">" || yt === ">") return true;
    if (xt === "*" || yt === "*" || xt === yt) continue;
    return false;
  }
}
