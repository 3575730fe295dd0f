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

/** The UTF-8 text of a payload, a readable hint for the start of a payload in the list. */
export function payloadText(message: MessageItem): string {
  return new TextDecoder().decode(decode(message.payload));
}

/** One message as text, JSON or hex, with its headers, key and tags. */
export function PayloadView({ message }: { message: MessageItem }) {
  const bytes = decode(message.payload);
  const text = new TextDecoder().decode(bytes);
  let json: string | undefined;
  try {
    json = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    json = undefined;
  }
  const [view, setView] = useState<"text" | "json" | "hex">(json ? "json" : "text");
  const shown = view === "hex" ? hexDump(bytes) : view === "json" ? (json ?? "not JSON") : text;
  return (
    <div class="payload" data-testid="payload-view">
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
