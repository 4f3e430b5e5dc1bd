export const views = ['full', 'conversations', 'leads', 'sequences', 'settings'] as const;
export type View = (typeof views)[number];

const isView = (value: string | null): value is View => views.includes(value as View);

/** `&view=` in the embed URL overrides the token's view; an unknown value is ignored. */
export const chooseView = (override: string | null, tokenView: View): View =>
  isView(override) ? override : tokenView;
