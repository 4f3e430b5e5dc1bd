import twilio from 'twilio';
import { CarrierRefusal } from './port';

/** Twilio's 4xx answers are the request's own fault: repeating it would fail the same way. */
const isRefusal = (error: unknown): error is twilio.RestException =>
  error instanceof twilio.RestException && error.status >= 400 && error.status < 500 && error.status !== 429;

/**
 * Runs one unit of work at Twilio, turning its refusals into CarrierRefusal (the step fails for good);
 * anything else (a 5xx, a 429, a network error) is thrown as it is, for the worker to try again.
 */
export async function refusalsAsCarrierRefusal<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isRefusal(error)) throw new CarrierRefusal(error.message, `twilio_${error.code ?? error.status}`);
    throw error;
  }
}

/** The words of Twilio's error entries (`errors` of a profile, a brand or a campaign), joined. */
export function reasonOf(errors: unknown, fallback: string): string {
  if (!Array.isArray(errors) || errors.length === 0) return fallback;
  const words = errors.map((entry: unknown) => {
    if (typeof entry === 'string') return entry;
    const record = (entry ?? {}) as Record<string, unknown>;
    const text = record.description ?? record.message ?? record.failure_reason ?? record.code;
    return typeof text === 'string' || typeof text === 'number' ? String(text) : JSON.stringify(record);
  });
  return words.join(' ');
}
