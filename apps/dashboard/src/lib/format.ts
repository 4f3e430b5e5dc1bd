/** A phone as people read it: +1 (512) 555-0101 for US numbers, E.164 otherwise. */
export function formatPhone(phone: string): string {
  const us = /^\+1(\d{3})(\d{3})(\d{4})$/.exec(phone);
  return us ? `+1 (${us[1]}) ${us[2]}-${us[3]}` : phone;
}

export function formatTime(iso: string | null, now = new Date()): string {
  if (!iso) return '';
  const date = new Date(iso);
  const sameDay = date.toDateString() === now.toDateString();
  return sameDay
    ? date.toLocaleTimeString(undefined, { hour: 'numeric', minute: '2-digit' })
    : date.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

/** A moment that matters to the minute (when the next step goes out), whatever the day. */
export function formatDateTime(iso: string | null): string {
  if (!iso) return '';
  return new Date(iso).toLocaleString(undefined, {
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
  });
}

export const percent = (share: number) => `${Math.round(share * 100)}%`;
