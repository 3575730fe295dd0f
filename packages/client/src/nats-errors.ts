import { Mq9Error } from "@mq9/protocol";
import { ErrorCode, NatsError } from "nats";

/** The one place where NATS client failures become Mq9Errors that say what to do. */
export function fromNatsError(err: unknown, what: string): Mq9Error {
  if (err instanceof Mq9Error) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof NatsError) {
    switch (err.code) {
      case ErrorCode.ConnectionRefused:
        return new Mq9Error("NOT_CONNECTED", `${what}: connection refused; is the broker running there?`, {
          cause: err,
        });
      case ErrorCode.AuthorizationViolation:
      case ErrorCode.AuthenticationExpired:
        return new Mq9Error(
          "NOT_CONNECTED",
          `${what}: the broker refused the credentials; check the token or user/password`,
          { cause: err, retryable: false },
        );
      case ErrorCode.Timeout:
      case ErrorCode.ConnectionTimeout:
        return new Mq9Error("TIMEOUT", `${what}: timed out; is the broker reachable?`, { cause: err });
      case ErrorCode.ConnectionClosed:
      case ErrorCode.ConnectionDraining:
      case ErrorCode.Disconnect:
        return new Mq9Error("NOT_CONNECTED", `${what}: the connection is closed`, { cause: err });
      case ErrorCode.BadSubject:
        return new Mq9Error("INVALID_NAME", `${what}: not a valid subject (${message})`, { cause: err });
      case ErrorCode.MaxPayloadExceeded:
        return new Mq9Error("INVALID_REQUEST", `${what}: ${message}; send a smaller payload`, { cause: err });
      case ErrorCode.ServerOptionNotAvailable:
        return new Mq9Error("NOT_CONNECTED", `${what}: the server does not offer ${message} (TLS?)`, {
          cause: err,
          retryable: false,
        });
    }
  }
  const code = (err as { code?: string }).code;
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EHOSTUNREACH") {
    return new Mq9Error("NOT_CONNECTED", `${what}: ${message}`, { cause: err });
  }
  if (typeof code === "string" && /^(ERR_TLS|CERT|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO)/.test(code)) {
    return new Mq9Error("NOT_CONNECTED", `${what}: TLS failed (${message}); check the CA (tls.caFile)`, {
      cause: err,
      retryable: false,
    });
  }
  return new Mq9Error("NOT_CONNECTED", `${what}: ${message}`, { cause: err });
}
