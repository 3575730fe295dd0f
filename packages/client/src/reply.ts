import {
  type DecodedReply,
  decodeCreateReply,
  decodeDeleteReply,
  decodeDiscoverReply,
  decodeMessagesReply,
  decodeReply,
  decodeSendReply,
} from "@mq9/protocol";

type Decoder<T> = (data: Uint8Array, subject: string) => DecodedReply<T>;

/** A protocol decoder as the request mux takes it: the value, or its Mq9Error thrown. */
function throwing<T>(decode: Decoder<T>): (data: Uint8Array, subject: string) => T {
  return (data, subject) => {
    const reply = decode(data, subject);
    if (!reply.ok) throw reply.error;
    return reply.value;
  };
}

/** The readers of each reply, shared with the broker's encoders through @mq9/protocol. */
export const readReply = {
  /** Any envelope: the whole reply object. */
  envelope: <T extends object>(data: Uint8Array, subject: string): T => {
    const reply = decodeReply<T>(data, subject);
    if (!reply.ok) throw reply.error;
    return reply.value;
  },
  send: throwing(decodeSendReply),
  create: throwing(decodeCreateReply),
  messages: throwing(decodeMessagesReply),
  /** A FETCH that asked for raw payloads (either reply form is read). */
  rawMessages: throwing((data, subject) => decodeMessagesReply(data, subject, true)),
  delete: throwing(decodeDeleteReply),
  discover: throwing(decodeDiscoverReply),
};
