export { AuthCounts, AuthGuard, type AuthOutcome, type AuthRefusal } from "./auth-guard.js";
export { AuthThrottle, type AuthThrottleOptions, type AuthTransport } from "./auth-throttle.js";
export { CheckPool, CheckShed } from "./check-pool.js";
export { ClientPermissions } from "./client-permissions.js";
export { Permissions, type SubscribeDecision } from "./permissions.js";
export { foldName, type Principal } from "./principal.js";
export { patternCovers, patternsOverlap } from "./subject-pattern.js";
export {
  type AuthenticatedUser,
  type ConnectCredentials,
  type PasswordCheckCounts,
  tokenUserName,
  UserDirectory,
} from "./user-directory.js";
export {
  AGENT_PERMISSIONS,
  type AuthOptions,
  type PermissionsOptions,
  type PermissionsProfile,
  type SubjectRules,
  type UserOptions,
} from "./user-options.js";
