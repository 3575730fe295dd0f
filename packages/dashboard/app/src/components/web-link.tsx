import type { ComponentChildren } from "preact";

/**
 * `value` as a URL a link may open: http(s) only. Anything else — `javascript:`, `data:`, a
 * relative path — from the broker's data (a roster entry, an agent card) would run or resolve in
 * the dashboard's own origin, with its credentials.
 */
export function webUrl(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** A link to `href` when it is http(s) (see webUrl); otherwise the same text, not clickable. */
export function WebLink({ href, children }: { href: unknown; children?: ComponentChildren }) {
  const url = webUrl(href);
  const text = children ?? String(href);
  if (url === undefined) return <span data-unsafe-url="">{text}</span>;
  return (
    <a href={url} rel="noopener noreferrer">
      {text}
    </a>
  );
}
