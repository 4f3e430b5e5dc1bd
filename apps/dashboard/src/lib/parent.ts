/** The five messages the dashboard posts to the page that embeds it. */
export type ParentMessage =
  | { type: 'service:conversation_selected'; data: { phone: string } }
  | { type: 'service:lead_status_changed'; data: { phone: string; status: string } }
  | { type: 'service:checklist_completed'; data: { phone: string } }
  | { type: 'service:message_sent'; data: { phone: string } }
  | { type: 'service:token_expiring'; data: Record<string, never> };

const originOf = (url: string | undefined) => {
  if (!url) return null;
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
};

/**
 * The exact origin messages go to: the one the token names, or else the embedding page's own (the
 * browser's ancestor origins, or the referrer of the frame's navigation). Null when unknown: then
 * nothing is posted, since posting to `*` could leak to whatever page framed us.
 */
export function parentOrigin(
  tokenParentOrigin: string | null,
  location: { ancestorOrigins?: DOMStringList },
  referrer: string,
): string | null {
  if (tokenParentOrigin) return tokenParentOrigin;
  return originOf(location.ancestorOrigins?.[0]) ?? originOf(referrer);
}

export interface ParentChannel {
  post(message: ParentMessage): void;
}

export function parentChannel(target: Window | null, origin: string | null): ParentChannel {
  return {
    post(message) {
      if (target && origin) target.postMessage(message, origin);
    },
  };
}

/**
 * A `service:refresh_token` message, accepted only from the parent window and from its exact origin:
 * any other frame or origin could otherwise swap the user's session for its own.
 */
export function refreshTokenFrom(
  event: Pick<MessageEvent, 'data' | 'origin' | 'source'>,
  parent: Window | null,
  origin: string | null,
): string | null {
  if (!parent || event.source !== parent || !origin || event.origin !== origin) return null;
  const data = event.data as { type?: unknown; token?: unknown } | null;
  if (!data || data.type !== 'service:refresh_token' || typeof data.token !== 'string') return null;
  return data.token.length > 0 && data.token.length <= 512 ? data.token : null;
}
