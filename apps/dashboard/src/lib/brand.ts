const DEFAULT_ACCENT = '#2563eb';

/** The account's accent colour, or a neutral blue; only hex colours reach the page's CSS. */
export function accentOf(color: string | null): string {
  return color && /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(color) ? color : DEFAULT_ACCENT;
}

/** Black or white, whichever reads better on the accent (WCAG relative luminance). */
export function textOn(hex: string): '#000000' | '#ffffff' {
  const full = hex.length === 4 ? hex.replace(/^#(.)(.)(.)$/, '#$1$1$2$2$3$3') : hex;
  const channel = (offset: number) => {
    const value = parseInt(full.slice(offset, offset + 2), 16) / 255;
    return value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luminance > 0.179 ? '#000000' : '#ffffff';
}

/** Applies the account's branding to the page: colours, title and favicon. Nothing of ours remains. */
export function applyBranding(
  document: Document,
  account: { company_name: string; logo_url: string | null; accent_color: string | null },
) {
  const accent = accentOf(account.accent_color);
  document.documentElement.style.setProperty('--accent', accent);
  document.documentElement.style.setProperty('--on-accent', textOn(accent));
  document.title = account.company_name;
  const icon = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
  if (icon && account.logo_url) icon.href = account.logo_url;
}
