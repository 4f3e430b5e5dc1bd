/** The billing period of a moment: its UTC month, `YYYY-MM`. */
export const periodOf = (isoTimestamp: string) => isoTimestamp.slice(0, 7);
