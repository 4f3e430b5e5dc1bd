import type { Schemas } from './api';
import { formatDateTime } from './format';

/** What enrolling a lead did, as the user needs to hear it, from the sequence or from the lead. */
export const enrollmentLabel = (
  enrollment: Pick<Schemas['Enrollment'], 'action' | 'message_sent' | 'next_step_at'>,
) => {
  const what =
    enrollment.action === 'already_enrolled'
      ? 'Already enrolled'
      : enrollment.action === 'reactivated'
        ? 'Enrolled again'
        : 'Enrolled';
  if (enrollment.message_sent) return `${what}; the first message is on its way.`;
  if (enrollment.next_step_at) return `${what}; next message ${formatDateTime(enrollment.next_step_at)}.`;
  return `${what}.`;
};
