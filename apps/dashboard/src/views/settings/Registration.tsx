import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';
import { formatDateTime, formatPhone } from '../../lib/format';
import { RegistrationForm } from './RegistrationForm';

type Registration = Schemas['CarrierRegistration'];
type Step = keyof Registration['steps'];

const steps: [Step, string, string][] = [
  ['customer_profile', 'Business profile', 'Your business details, checked against public records.'],
  ['brand', 'Brand', 'Your business, registered with the carriers.'],
  ['campaign', 'Campaign', 'What you text leads and how they agree to it.'],
  ['number', 'Phone number', 'Your number, joined to the approved campaign.'],
];

const statusLabels: Record<Registration['status'], string> = {
  draft: 'Not submitted',
  pending: 'In review',
  approved: 'Approved',
  failed: 'Rejected',
};

/**
 * How often a registration in progress is read again: soon after a submission (the first step is
 * submitted within moments), then every half minute while the carriers review (hours to weeks).
 */
const refreshMs = (registration: Registration | null) => {
  if (!registration?.submitted_at) return undefined;
  if (registration.status === 'draft') return 3_000;
  return registration.status === 'pending' ? 30_000 : undefined;
};

/**
 * Where the carriers' registration of the account's number stands, step by step, with the carrier's
 * reason for a rejection. Administrators submit the business profile (and correct it after a
 * rejection); members only read.
 */
export function Registration() {
  const { api, session } = useDashboard();
  const canManage = useCan('manage_settings');
  const [registration, setRegistration] = useState<Registration | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const id = session.account.id;

  const load = useCallback(async () => {
    setRegistration(
      dataOf(await api.GET('/accounts/{id}/compliance/registration', { params: { path: { id } } })),
    );
  }, [api, id]);
  useEffect(() => {
    void load().catch((failure: Error) => setError(failure.message));
  }, [load]);
  const every = refreshMs(registration);
  useEffect(() => {
    if (every === undefined) return undefined;
    const timer = setInterval(() => void load().catch(() => undefined), every);
    return () => clearInterval(timer);
  }, [load, every]);

  const submit = async (request: Schemas['CarrierRegistrationRequest']) => {
    setError(null);
    try {
      setRegistration(
        dataOf(
          await api.PUT('/accounts/{id}/compliance/registration', {
            params: { path: { id } },
            body: request,
          }),
        ),
      );
      setEditing(false);
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  const { profile } = registration ?? { profile: null };
  const open = registration && (registration.status === 'draft' || registration.status === 'failed');
  return (
    <section className="panel" aria-label="Texting registration">
      <h2>Texting registration</h2>
      <p className="sub">
        US carriers review the business behind every number that texts leads. Until the campaign is approved,
        messages to leads may be held.
      </p>
      {registration && (
        <>
          <p>
            <span className={`badge step-${registration.status}`} aria-label="Registration status">
              {statusLabels[registration.status]}
            </span>
          </p>
          <ol className="registration-steps">
            {steps.map(([step, label, explanation]) => {
              const { status, reason, updated_at } = registration.steps[step];
              return (
                <li key={step} className={`registration-step ${status}`} aria-label={label}>
                  <div className="registration-step-head">
                    <strong>{label}</strong>
                    <span className={`badge step-${status}`}>{statusLabels[status]}</span>
                    {updated_at && status !== 'draft' && (
                      <span className="sub">{formatDateTime(updated_at)}</span>
                    )}
                  </div>
                  <div className="sub">{explanation}</div>
                  {reason && (
                    <p className="reason" role="note">
                      {reason}
                    </p>
                  )}
                </li>
              );
            })}
          </ol>
          {profile && (
            <dl className="registration-profile" aria-label="Submitted business profile">
              <dt>Business</dt>
              <dd>{profile.legal_name}</dd>
              <dt>EIN</dt>
              <dd>{profile.tax_id}</dd>
              <dt>Website</dt>
              <dd>{profile.website}</dd>
              <dt>Representative</dt>
              <dd>
                {profile.contact.first_name} {profile.contact.last_name}, {profile.contact.title} ·{' '}
                {formatPhone(profile.contact.phone)}
              </dd>
              {registration.submitted_at && (
                <>
                  <dt>Submitted</dt>
                  <dd>{formatDateTime(registration.submitted_at)}</dd>
                </>
              )}
            </dl>
          )}
        </>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {registration && open && canManage && !editing && (
        <div className="actions">
          <button type="button" onClick={() => setEditing(true)}>
            {registration.status === 'failed' ? 'Correct and resubmit' : 'Submit business profile'}
          </button>
        </div>
      )}
      {registration && open && canManage && editing && (
        <RegistrationForm key={registration.submitted_at ?? 'new'} previous={profile} onSubmit={submit} />
      )}
      {registration && open && !canManage && (
        <p className="sub">An administrator of this account submits the business profile.</p>
      )}
    </section>
  );
}
