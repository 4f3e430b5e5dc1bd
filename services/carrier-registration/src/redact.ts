/** Tax ids never reach a log or a reason: a provider's message may quote the number it refused. */
export const redactTaxIds = (text: string) => text.replace(/\b\d{2}-?\d{7}\b/g, '[tax id]');
