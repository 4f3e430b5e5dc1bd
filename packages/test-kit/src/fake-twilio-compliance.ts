import { handleMessaging } from './fake-twilio-compliance/messaging';
import type { FakeCompliance, FakeComplianceContext } from './fake-twilio-compliance/model';
import { complianceResources, type FakeComplianceApi } from './fake-twilio-compliance/resources';
import { handleTrustHub } from './fake-twilio-compliance/trust-hub';
import type { IncomingMessage, ServerResponse } from 'node:http';

export type * from './fake-twilio-compliance/model';

export function createFakeCompliance(context: FakeComplianceContext) {
  const { accountSid, json, twilioError } = context;
  let failures = 0;
  const state: FakeCompliance = {
    customerProfiles: [],
    trustProducts: [],
    endUsers: [],
    supportingDocuments: [],
    addresses: [],
    brands: [],
    services: [],
    campaigns: [],
    callbacks: [],
    dropCallbacks: false,
    requests: [],
    deliver: async (url, form, signature) => {
      await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        body: new URLSearchParams(form),
      });
    },
    failNext(count) {
      failures = count;
    },
    async review(sid, status, errors = []) {
      const bundle = [...state.customerProfiles, ...state.trustProducts].find((entry) => entry.sid === sid);
      if (!bundle) throw new Error(`no bundle ${sid}`);
      bundle.status = status;
      bundle.errors = errors;
      if (!bundle.statusCallback) return;
      // Form fields as Trust Hub's status callback sends them.
      const form = {
        AccountSid: accountSid,
        BundleSid: bundle.sid,
        Status: status,
        FailureReason: errors.length > 0 ? JSON.stringify(errors) : '',
      };
      const callback = { url: bundle.statusCallback, form, delivered: !state.dropCallbacks };
      state.callbacks.push(callback);
      if (callback.delivered) await state.deliver(callback.url, form, context.sign(callback.url, form));
    },
    setBrandStatus(sid, status, failureReason) {
      const brand = state.brands.find((entry) => entry.sid === sid);
      if (!brand) throw new Error(`no brand ${sid}`);
      brand.status = status;
      brand.failureReason = failureReason ?? null;
      brand.errors = failureReason ? [{ code: 30794, description: failureReason, fields: [] }] : [];
    },
    setCampaignStatus(sid, status, errors = []) {
      const campaign = state.campaigns.find((entry) => entry.sid === sid);
      if (!campaign) throw new Error(`no campaign ${sid}`);
      campaign.campaignStatus = status;
      campaign.errors = errors;
    },
  };
  const api: FakeComplianceApi = { ...context, state, resources: complianceResources(accountSid, state) };

  /** True when the request was one of the onboarding endpoints (and answered). */
  async function handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    const method = request.method ?? 'GET';
    const addresses = `/2010-04-01/Accounts/${accountSid}/Addresses.json`;
    if (!path.startsWith('/trusthub/') && !path.startsWith('/messaging/') && path !== addresses) return false;
    state.requests.push(`${method} ${path}`);
    if (failures > 0) {
      failures--;
      json(response, 503, twilioError(503, 20503, 'Service Unavailable'));
      return true;
    }
    return (
      (await handleTrustHub(api, request, response, url)) || handleMessaging(api, request, response, url)
    );
  }

  return { state, handle };
}
