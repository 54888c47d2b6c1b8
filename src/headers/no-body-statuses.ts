/**
 * The statuses whose responses carry no body and may not declare one (RFC 9110 §8.6;
 * the Fetch standard's "null body status"): the server sends such an answer without a
 * body, and a `Response` built for one must have none. The server (`http/`) and the
 * client (`client/`) both read this one set; neither may import the other, and the core
 * knows no status code, so it lives here with the header they share.
 */
export const NO_BODY_STATUSES: ReadonlySet<number> = new Set([101, 103, 204, 205, 304])
