export const WARNING_MS = 5 * 60 * 1000;

/** Milliseconds until `service:token_expiring` is due: 5 minutes before expiry, or at once when less is left. */
export const expiringDelay = (expiresAt: string, now: number) =>
  Math.max(0, new Date(expiresAt).getTime() - WARNING_MS - now);

/** Warns once per token: a refreshed token schedules its own warning and cancels the old one. */
export function scheduleExpiring(expiresAt: string, now: () => number, warn: () => void): () => void {
  const handle = setTimeout(warn, expiringDelay(expiresAt, now()));
  return () => clearTimeout(handle);
}
