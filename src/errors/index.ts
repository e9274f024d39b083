/** The error classes and the failure classifier of validic-sync (README.md says where each lives). */
export { BodyTooLargeError } from './body-too-large-error.ts';
export { causeChain, errorCodeIn, errorCodeOf, hasErrorCode } from './cause-chain.ts';
export { classifyFailure, type Failure, type FailureKind } from './classify-failure.ts';
export { ConfigError, type ConfigProblem } from './config-error.ts';
export {
  CONFLICT_CODES,
  CONNECTION_CODES,
  NOT_SENT_CODES,
  OUTAGE_CODES,
  OUTAGE_MESSAGES,
  UNRESOLVED_HOST_CODES,
} from './error-codes.ts';
export { type HttpAnswerFields, HttpError, type HttpErrorDetails } from './http-error.ts';
export { httpStatusOf } from './http-status-of.ts';
export { IncompleteListingError, type ListingCounts } from './incomplete-listing-error.ts';
export { NetworkError } from './network-error.ts';
export { PermanentError } from './permanent-error.ts';
export { PermanentHttpError } from './permanent-http-error.ts';
export { RateLimitedError } from './rate-limited-error.ts';
export { RedirectRefusedError } from './redirect-refused-error.ts';
export { ResponseBodyError } from './response-body-error.ts';
export { StreamRebalancingError } from './stream-rebalancing-error.ts';
export { SyncError } from './sync-error.ts';
export { toError } from './to-error.ts';
export { UnexpectedResponseError } from './unexpected-response-error.ts';
export { UnsafePathSegmentError } from './unsafe-path-segment-error.ts';
export { UsageError } from './usage-error.ts';
export { UserFacingError } from './user-facing-error.ts';
