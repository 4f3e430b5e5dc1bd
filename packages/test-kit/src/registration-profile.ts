import type { RegistrationProfile } from '@leadline/domain';

/**
 * A lender's carrier registration profile as the API records it on `compliance.registration_submitted`
 * (validated, optional parts filled in), for tests that append that event themselves rather than
 * submitting through the API.
 */
export const registrationProfile: RegistrationProfile = {
  legal_name: 'Sunrise Home Loans LLC',
  business_type: 'llc',
  vertical: 'financial',
  website: 'https://sunrisehomeloans.example',
  address: {
    street: '100 Congress Ave',
    street_secondary: null,
    city: 'Austin',
    region: 'TX',
    postal_code: '78701',
    country: 'US',
  },
  contact: {
    first_name: 'Dana',
    last_name: 'Reyes',
    title: 'Compliance officer',
    job_position: 'director',
    email: 'dana@sunrisehomeloans.example',
    phone: '+15125550100',
  },
  use_case: 'mixed',
  use_case_description: 'Follow-up with mortgage applicants about their application and its documents.',
  sample_messages: [
    'Sunrise Home Loans: please send your W-2.',
    'Sunrise Home Loans: reply STOP to opt out.',
  ],
  message_flow: 'Applicants tick an SMS consent box on the loan application form.',
  opt_in_keywords: [],
  opt_in_message: null,
  direct_lending: true,
  has_embedded_links: false,
  has_embedded_phone: false,
};
