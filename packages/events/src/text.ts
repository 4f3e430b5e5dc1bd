/**
 * The string rule of the whole product: text we accept must be storable everywhere it goes. A NUL
 * character cannot be stored in a PostgreSQL `text` or `jsonb` value, and a lone UTF-16 surrogate has
 * no UTF-8 encoding (Postgres refuses it in `jsonb`, other consumers mangle it). Such a string is
 * refused at the edge of the partner API and by the codec before it reaches the log; text from phones
 * (inbound SMS) is cleaned instead, since it must never be lost.
 */

// Node 20 has these (ES2024); the compiler's lib is ES2023.
type WellFormed = { isWellFormed(): boolean; toWellFormed(): string };

/** True when `text` contains no NUL and no lone surrogate. */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && (text as unknown as WellFormed).isWellFormed();
}

/** What is wrong with a string that is not storable, for a person to read. */
export function unstorableReason(text: string): string {
  return text.includes('\u0000')
    ? 'Must not contain the NUL character (U+0000).'
    : 'Must not contain an unpaired UTF-16 surrogate (not valid Unicode).';
}

/** Removes NUL characters and replaces lone surrogates with U+FFFD, keeping everything else. */
export function cleanText(text: string): string {
  return (text.replaceAll('\u0000', '') as unknown as WellFormed).toWellFormed();
}

/** Every string value of a form (Twilio's webhooks), cleaned. */
export function cleanForm<T extends Record<string, unknown>>(form: T): T {
  return Object.fromEntries(
    Object.entries(form).map(([key, value]) => [
      cleanText(key),
      typeof value === 'string' ? cleanText(value) : value,
    ]),
  ) as T;
}

export interface UnstorableText {
  /** Dotted path of the offending value (or key), e.g. `metadata.note`. */
  field: string;
  message: string;
}

/**
 * The first string in `value` (object keys included, at any depth) that is not storable, or
 * undefined. Iterative, so a deeply nested document cannot overflow the stack.
 */
export function findUnstorableText(value: unknown, root = ''): UnstorableText | undefined {
  return isStorableThroughout(value) ? undefined : locateUnstorableText(value, root);
}

/**
 * The check alone, without the paths: every event appended goes through it, and naming each value's
 * path on the way (a string made for every field) cost more than the check itself.
 */
function isStorableThroughout(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (!isStorableText(current)) return false;
    } else if (Array.isArray(current)) {
      for (const item of current) stack.push(item);
    } else if (current !== null && typeof current === 'object') {
      for (const key in current) {
        if (!Object.hasOwn(current, key)) continue;
        if (!isStorableText(key)) return false;
        stack.push((current as Record<string, unknown>)[key]);
      }
    }
  }
  return true;
}

/** The first string that is not storable, with its path, in the order a reader would look. */
function locateUnstorableText(value: unknown, root: string): UnstorableText | undefined {
  const join = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);
  const stack: [unknown, string][] = [[value, root]];
  while (stack.length > 0) {
    const [current, path] = stack.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) return { field: path, message: unstorableReason(current) };
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--)
        stack.push([current[index], join(path, String(index))]);
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, child] = entries[index]!;
        if (!isStorableText(key))
          return { field: join(path, cleanText(key)), message: unstorableReason(key) };
        stack.push([child, join(path, key)]);
      }
    }
  }
  return undefined;
}

/** Thrown by the codec for an event carrying a string no projection could store. */
export class UnstorableTextError extends Error {
  constructor(readonly problem: UnstorableText) {
    super(`${problem.field}: ${problem.message}`);
    this.name = 'UnstorableTextError';
  }
}
