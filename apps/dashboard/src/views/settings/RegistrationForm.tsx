import { useState } from 'react';
import type { Schemas } from '../../lib/api';

type Request = Schemas['CarrierRegistrationRequest'];
type Profile = Schemas['CarrierRegistrationProfile'];

const businessTypes: [Request['business_type'], string][] = [
  ['llc', 'Limited liability company'],
  ['corporation', 'Corporation'],
  ['partnership', 'Partnership'],
  ['sole_proprietorship', 'Sole proprietorship'],
  ['co_operative', 'Co-operative'],
  ['non_profit', 'Non-profit'],
];
const verticals: [Request['vertical'], string][] = [
  ['financial', 'Financial services'],
  ['banking', 'Banking'],
  ['real_estate', 'Real estate'],
  ['insurance', 'Insurance'],
  ['fintech', 'Fintech'],
  ['legal', 'Legal'],
  ['technology', 'Technology'],
];
const positions: [Request['contact']['job_position'], string][] = [
  ['director', 'Director'],
  ['gm', 'General manager'],
  ['vp', 'Vice president'],
  ['ceo', 'CEO'],
  ['cfo', 'CFO'],
  ['general_counsel', 'General counsel'],
  ['other', 'Other'],
];

interface Draft {
  legal_name: string;
  tax_id: string;
  business_type: Request['business_type'];
  vertical: Request['vertical'];
  website: string;
  street: string;
  city: string;
  region: string;
  postal_code: string;
  first_name: string;
  last_name: string;
  title: string;
  job_position: Request['contact']['job_position'];
  email: string;
  phone: string;
  use_case_description: string;
  samples: string[];
  message_flow: string;
  direct_lending: boolean;
}

/** A draft from what was submitted before (the tax id is never answered: it is typed again). */
const draftOf = (profile: Profile | null): Draft => ({
  legal_name: profile?.legal_name ?? '',
  tax_id: '',
  business_type: profile?.business_type ?? 'llc',
  vertical: profile?.vertical ?? 'financial',
  website: profile?.website ?? '',
  street: profile?.address.street ?? '',
  city: profile?.address.city ?? '',
  region: profile?.address.region ?? '',
  postal_code: profile?.address.postal_code ?? '',
  first_name: profile?.contact.first_name ?? '',
  last_name: profile?.contact.last_name ?? '',
  title: profile?.contact.title ?? '',
  job_position: profile?.contact.job_position ?? 'director',
  email: profile?.contact.email ?? '',
  phone: profile?.contact.phone ?? '',
  use_case_description: profile?.use_case_description ?? '',
  samples: profile?.sample_messages.length ? [...profile.sample_messages] : ['', ''],
  message_flow: profile?.message_flow ?? '',
  direct_lending: profile?.direct_lending ?? true,
});

const requestOf = (draft: Draft): Request => ({
  legal_name: draft.legal_name.trim(),
  tax_id: draft.tax_id.trim(),
  business_type: draft.business_type,
  vertical: draft.vertical,
  website: draft.website.trim(),
  address: {
    street: draft.street.trim(),
    city: draft.city.trim(),
    region: draft.region.trim(),
    postal_code: draft.postal_code.trim(),
  },
  contact: {
    first_name: draft.first_name.trim(),
    last_name: draft.last_name.trim(),
    title: draft.title.trim(),
    job_position: draft.job_position,
    email: draft.email.trim(),
    phone: draft.phone.trim(),
  },
  use_case_description: draft.use_case_description.trim(),
  sample_messages: draft.samples.map((sample) => sample.trim()).filter(Boolean),
  message_flow: draft.message_flow.trim(),
  direct_lending: draft.direct_lending,
});

/** The business profile the carriers review, for an administrator to submit or correct. */
export function RegistrationForm({
  previous,
  onSubmit,
}: {
  previous: Profile | null;
  onSubmit: (request: Request) => Promise<void>;
}) {
  const [draft, setDraft] = useState(() => draftOf(previous));
  const [busy, setBusy] = useState(false);
  const edit = (change: Partial<Draft>) => setDraft({ ...draft, ...change });
  const text = (field: keyof Draft, label: string, options: { type?: string; placeholder?: string } = {}) => (
    <label className="field">
      {label}
      <input
        aria-label={label}
        type={options.type ?? 'text'}
        placeholder={options.placeholder}
        value={draft[field] as string}
        onChange={(event) => edit({ [field]: event.target.value })}
      />
    </label>
  );
  const choice = <T extends string>(field: keyof Draft, label: string, options: [T, string][]) => (
    <label className="field">
      {label}
      <select
        aria-label={label}
        value={draft[field] as string}
        onChange={(event) => edit({ [field]: event.target.value })}
      >
        {options.map(([value, name]) => (
          <option key={value} value={value}>
            {name}
          </option>
        ))}
      </select>
    </label>
  );

  return (
    <form
      className="registration-form"
      onSubmit={(event) => {
        event.preventDefault();
        setBusy(true);
        void onSubmit(requestOf(draft)).finally(() => setBusy(false));
      }}
    >
      <h3>Business</h3>
      <div className="field-grid">
        {text('legal_name', 'Legal business name', { placeholder: 'Exactly as on your EIN letter' })}
        {text('tax_id', 'EIN', { placeholder: '12-3456789' })}
        {choice('business_type', 'Business type', businessTypes)}
        {choice('vertical', 'Industry', verticals)}
        {text('website', 'Website', { type: 'url', placeholder: 'https://' })}
        {text('street', 'Street address')}
        {text('city', 'City')}
        {text('region', 'State', { placeholder: 'TX' })}
        {text('postal_code', 'ZIP code')}
      </div>
      <h3>Authorized representative</h3>
      <div className="field-grid">
        {text('first_name', 'First name')}
        {text('last_name', 'Last name')}
        {text('title', 'Title')}
        {choice('job_position', 'Position', positions)}
        {text('email', 'Email', { type: 'email' })}
        {text('phone', 'Phone', { type: 'tel' })}
      </div>
      <h3>Messages</h3>
      <label className="field">
        What your messages are for
        <textarea
          aria-label="What your messages are for"
          rows={2}
          value={draft.use_case_description}
          onChange={(event) => edit({ use_case_description: event.target.value })}
        />
      </label>
      {draft.samples.map((sample, index) => (
        <label key={index} className="field">
          Sample message {index + 1}
          <textarea
            aria-label={`Sample message ${index + 1}`}
            rows={2}
            value={sample}
            onChange={(event) =>
              edit({ samples: draft.samples.map((old, at) => (at === index ? event.target.value : old)) })
            }
          />
        </label>
      ))}
      {draft.samples.length < 5 && (
        <button type="button" className="link" onClick={() => edit({ samples: [...draft.samples, ''] })}>
          Add a sample message
        </button>
      )}
      <label className="field">
        How leads agree to receive messages
        <textarea
          aria-label="How leads agree to receive messages"
          rows={2}
          placeholder="e.g. the consent checkbox on our loan application at https://…"
          value={draft.message_flow}
          onChange={(event) => edit({ message_flow: event.target.value })}
        />
      </label>
      <label className="check">
        <input
          type="checkbox"
          checked={draft.direct_lending}
          onChange={(event) => edit({ direct_lending: event.target.checked })}
        />
        The messages offer or arrange loans
      </label>
      <div className="actions">
        <button type="submit" disabled={busy}>
          Submit for review
        </button>
      </div>
    </form>
  );
}
