import type { MessageItem } from "@mq9/broker/api";
import { useState } from "preact/hooks";

function decode(base64: string): Uint8Array {
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

function hexDump(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let at = 0; at < bytes.length; at += 16) {
    const row = [...bytes.slice(at, at + 16)];
    const hex = row.map((b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = row.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${at.toString(16).padStart(6, "0")}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join("\n");
}

/** The payload's text, or undefined when its bytes are not UTF-8 text (binary: shown as hex). */
function textOf(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
  // Control characters other than tab and line breaks: binary that happens to decode.
  return /[\u0000-\u0008\u000e-\u001f\u007f]/.test(text) ? undefined : text;
}

/** A readable hint of a payload for a list: its text's start, or its first bytes in hex. */
export function payloadHint(message: MessageItem): string {
  const bytes = decode(message.payload);
  const text = textOf(bytes);
  if (text !== undefined) return text.slice(0, 80);
  const hex = [...bytes.slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
  return `binary: ${hex}${bytes.length > 16 ? " …" : ""}`;
}

/** One message as text, JSON or hex (chosen by its content: binary as hex), with its headers, key and tags. */
export function PayloadView({ message }: { message: MessageItem }) {
  const bytes = decode(message.payload);
  const text = textOf(bytes);
  let json: string | undefined;
  try {
    json = text === undefined ? undefined : JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    json = undefined;
  }
  const [view, setView] = useState<"text" | "json" | "hex">(
    json ? "json" : text === undefined ? "hex" : "text",
  );
  const shown =
    view === "hex"
      ? hexDump(bytes)
      : view === "json"
        ? (json ?? "not JSON")
        : (text ?? "not text (binary): see hex");
  return (
    <div class="payload" data-testid="payload-view" data-view={view}>
      <div class="tabs">
        {(["text", "json", "hex"] as const).map((v) => (
          <button type="button" class={view === v ? "on" : ""} onClick={() => setView(v)} key={v}>
            {v}
          </button>
        ))}
        <span class="muted">
          msg_id {message.msg_id} · {message.priority} · {bytes.length} bytes ·{" "}
          {new Date(message.create_time * 1000).toLocaleString()}
        </span>
      </div>
      <pre data-testid="payload-body">{shown}</pre>
      <dl class="facts">
        {message.key !== undefined && (
          <>
            <dt>key</dt>
            <dd>{message.key}</dd>
          </>
        )}
        {message.tags && (
          <>
            <dt>tags</dt>
            <dd>{message.tags.join(", ")}</dd>
          </>
        )}
        {Object.entries(message.headers ?? {}).map(([name, value]) => (
          <>
            <dt>{name}</dt>
            <dd>{value}</dd>
          </>
        ))}
      </dl>
    </div>
  );
}
