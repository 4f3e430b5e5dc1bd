/** The SSRF guard is shared by every outbound fetch; the relay keeps its historical import path. */
export {
  checkAddress,
  resolveTarget,
  TargetRefusedError,
  type AddressVerdict,
  type ResolvedTarget,
  type Resolver,
} from '@leadline/runtime';
