/** The failure model of validic-sync, one import away: its error classes, the cause chain and its codes, the classifier. */

export {
  CONFLICT_CODES,
  CONNECTION_CODES,
  causeChain,
  errorCodeIn,
  errorCodeOf,
  hasErrorCode,
  NOT_SENT_CODES,
  OUTAGE_CODES,
  OUTAGE_MESSAGES,
  UNRESOLVED_HOST_CODES,
} from './cause-chain.ts';
export { classifyFailure, type Failure, type FailureKind } from './classify-failure.ts';
export {
  BodyTooLargeError,
  ConfigError,
  type ConfigProblem,
  type HttpAnswerFields,
  HttpError,
  type HttpErrorDetails,
  httpStatusOf,
  IncompleteListingError,
  type ListingCounts,
  NetworkError,
  PermanentError,
  PermanentHttpError,
  RateLimitedError,
  RedirectRefusedError,
  ResponseBodyError,
  StreamRebalancingError,
  SyncError,
  toError,
  UnexpectedResponseError,
  UnsafePathSegmentError,
  UsageError,
  UserFacingError,
} from './error-classes.ts';
