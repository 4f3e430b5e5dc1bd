/** What the embed URL carries: the token, and optionally a view that overrides the token's. */
export interface UrlParameters {
  token: string | null;
  view: string | null;
}

/**
 * Reads the token and view from the address, then removes them from it at once, so neither the
 * history, a reload nor a Referer header carries the token afterwards.
 */
export function takeUrlParameters(location: Location, history: History): UrlParameters {
  const params = new URLSearchParams(location.search);
  const taken = { token: params.get('token'), view: params.get('view') };
  if (params.has('token')) history.replaceState(null, '', location.pathname);
  return taken;
}
