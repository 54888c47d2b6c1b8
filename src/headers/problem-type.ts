/**
 * The base of idem's own problem types: a `type` is this plus `#<code>`
 * (`urn:idem:problem#in-flight`). An identifier to compare, not a page to fetch (RFC 9457
 * allows a type URI that does not resolve); each is documented in docs/problems.md, which
 * ships in the package. The server (`http/`) writes it unless its `problemTypes` option
 * says otherwise, and the client (`client/`) recognises idem's in-flight answers by it;
 * neither may import the other, so it lives here with the header they share.
 */
export const DEFAULT_PROBLEM_TYPE_BASE = 'urn:idem:problem'
