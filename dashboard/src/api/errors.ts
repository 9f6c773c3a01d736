// Every way an API call can fail, as types a page can branch on. The controller answers
// errors as JSON {code, message, field?} (tlbfleet.v1.ApiError) with the HTTP status of the
// gRPC code; anything else (no answer, a proxy's HTML page) is the API being unreachable.
import { ApiError as ApiErrorBody } from "./gen/tlbfleet/v1/auth";

/** The server answered with an error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The gRPC code's name: INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, ... */
    readonly code: string,
    message: string,
    /** The request or run-spec field at fault, e.g. "arms[0].params.threads". */
    readonly field?: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** 401: no session, or it expired. The app sends the user to the login page. */
export class UnauthenticatedError extends ApiError {}
/** 403: the session's role is too small (a viewer submitting a run). */
export class PermissionDeniedError extends ApiError {}
/** 404: the run (or other thing) does not exist. */
export class NotFoundError extends ApiError {}
/** 400 with a field: a value the user can fix. */
export class InvalidArgumentError extends ApiError {}

/** No answer, or an answer that is not the API's (502/503/504, a proxy page). */
export class ApiUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ApiUnavailableError";
  }
}

/** Builds the typed error for a non-2xx response whose body was read as `text`. */
export function errorFromResponse(status: number, text: string): ApiError | ApiUnavailableError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const isBody =
    typeof body === "object" &&
    body !== null &&
    typeof (body as { message?: unknown }).message === "string";
  if (!isBody) {
    if (status === 502 || status === 503 || status === 504) {
      return new ApiUnavailableError(`the controller is not answering (HTTP ${status})`);
    }
    const snippet = text.trim().slice(0, 200);
    return new ApiError(status, codeForStatus(status), snippet || `HTTP ${status}`);
  }
  const decoded = ApiErrorBody.fromJSON(body);
  const code = decoded.code || codeForStatus(status);
  const field = decoded.field || undefined;
  const message = decoded.message;
  switch (status) {
    case 401:
      return new UnauthenticatedError(status, code, message, field);
    case 403:
      return new PermissionDeniedError(status, code, message, field);
    case 404:
      return new NotFoundError(status, code, message, field);
    case 400:
      return new InvalidArgumentError(status, code, message, field);
    case 503:
      // UNAVAILABLE from the controller itself (e.g. shutting down): retry like a lost link.
      if (code === "UNAVAILABLE") return new ApiUnavailableError(message);
      return new ApiError(status, code, message, field);
    default:
      return new ApiError(status, code, message, field);
  }
}

function codeForStatus(status: number): string {
  switch (status) {
    case 400:
      return "INVALID_ARGUMENT";
    case 401:
      return "UNAUTHENTICATED";
    case 403:
      return "PERMISSION_DENIED";
    case 404:
      return "NOT_FOUND";
    case 409:
      return "FAILED_PRECONDITION";
    case 429:
      return "RESOURCE_EXHAUSTED";
    case 503:
      return "UNAVAILABLE";
    default:
      return status >= 500 ? "INTERNAL" : "UNKNOWN";
  }
}

/**
 * The field an error names: the `field` of the body, or else the path the message starts
 * with ("arms[0].ceiling: must be ..."), as the controller's run-spec messages do.
 */
export function fieldOf(error: ApiError): string | undefined {
  if (error.field) return error.field;
  const m = /^([A-Za-z_][\w]*(?:\[\d+\]|\.[A-Za-z_][\w]*)*): /.exec(error.message);
  return m?.[1];
}
