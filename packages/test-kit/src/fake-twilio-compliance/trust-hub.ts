import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeAddress, FakeBundle, FakeEndUser, FakeSupportingDocument } from './model';
import { iso, page, rfc2822, sidOf, TRUSTHUB, type FakeComplianceApi } from './resources';

async function handleBundles(
  api: FakeComplianceApi,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  kind: FakeBundle['kind'],
  collection: string,
  list: FakeBundle[],
): Promise<boolean> {
  const { accountSid, json, twilioError, state } = api;
  const { bundleResource, evaluate } = api.resources;
  const context = api;
  const root = `/trusthub/v1/${collection}`;
  const method = request.method;
  if (url.pathname === root && method === 'POST') {
    const form = await context.readForm(request);
    const bundle: FakeBundle = {
      sid: sidOf('BU'),
      kind,
      friendlyName: form.get('FriendlyName') ?? '',
      email: form.get('Email') ?? '',
      policySid: form.get('PolicySid') ?? '',
      statusCallback: form.get('StatusCallback') ?? undefined,
      status: 'draft',
      errors: [],
      assignments: [],
      dateCreated: new Date(),
    };
    list.push(bundle);
    json(response, 201, bundleResource(bundle));
    return true;
  }
  if (url.pathname === root && method === 'GET') {
    const name = url.searchParams.get('FriendlyName');
    const status = url.searchParams.get('Status');
    const found = list.filter(
      (bundle) =>
        (name === null || bundle.friendlyName === name) && (status === null || bundle.status === status),
    );
    json(
      response,
      200,
      page(
        'results',
        `${TRUSTHUB}/${collection}`,
        found.map(bundleResource),
        Number(url.searchParams.get('PageSize') ?? 50),
      ),
    );
    return true;
  }
  const match = url.pathname.match(
    new RegExp(`^${root}/(BU[0-9a-f]{32})(?:/(EntityAssignments|Evaluations))?$`),
  );
  if (!match) return false;
  const bundle = list.find((entry) => entry.sid === match[1]);
  if (!bundle) {
    json(response, 404, twilioError(404, 20404, `The requested resource ${url.pathname} was not found`));
    return true;
  }
  if (!match[2] && method === 'GET') {
    json(response, 200, bundleResource(bundle));
    return true;
  }
  if (!match[2] && method === 'POST') {
    const form = await context.readForm(request);
    const status = form.get('Status');
    if (status === 'pending-review') {
      if (evaluate(bundle).status !== 'compliant') {
        json(
          response,
          400,
          twilioError(400, 22215, 'The bundle is not compliant; evaluate it and complete it first.'),
        );
        return true;
      }
      bundle.status = 'pending-review';
    }
    json(response, 200, bundleResource(bundle));
    return true;
  }
  if (match[2] === 'EntityAssignments' && method === 'POST') {
    const form = await context.readForm(request);
    const objectSid = form.get('ObjectSid') ?? '';
    const known =
      state.endUsers.some((user) => user.sid === objectSid) ||
      state.supportingDocuments.some((document) => document.sid === objectSid) ||
      objectSid.startsWith('BU');
    if (!known) {
      json(response, 400, twilioError(400, 20001, `Invalid ObjectSid ${objectSid}`));
      return true;
    }
    bundle.assignments.push(objectSid);
    const parent = kind === 'customer_profile' ? 'customer_profile_sid' : 'trust_product_sid';
    json(response, 201, {
      sid: sidOf('BV'),
      [parent]: bundle.sid,
      account_sid: accountSid,
      object_sid: objectSid,
      date_created: iso(new Date()),
      url: `${TRUSTHUB}/${collection}/${bundle.sid}/EntityAssignments`,
    });
    return true;
  }
  if (match[2] === 'Evaluations' && method === 'POST') {
    await context.readForm(request);
    const evaluation = evaluate(bundle);
    const parent = kind === 'customer_profile' ? 'customer_profile_sid' : 'trust_product_sid';
    json(response, 201, {
      sid: sidOf('EL'),
      account_sid: accountSid,
      policy_sid: bundle.policySid,
      [parent]: bundle.sid,
      status: evaluation.status,
      results: evaluation.results,
      date_created: iso(new Date()),
      url: `${TRUSTHUB}/${collection}/${bundle.sid}/Evaluations`,
    });
    return true;
  }
  return false;
}

/** Trust Hub (bundles, end users, supporting documents) and the account's addresses; false when not one of them. */
export async function handleTrustHub(
  api: FakeComplianceApi,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
): Promise<boolean> {
  const { accountSid, json, twilioError, state } = api;
  const context = api;
  const path = url.pathname;
  const method = request.method ?? 'GET';
  const addresses = `/2010-04-01/Accounts/${accountSid}/Addresses.json`;
  if (
    await handleBundles(
      api,
      request,
      response,
      url,
      'customer_profile',
      'CustomerProfiles',
      state.customerProfiles,
    )
  )
    return true;
  if (await handleBundles(api, request, response, url, 'trust_product', 'TrustProducts', state.trustProducts))
    return true;

  if (path === '/trusthub/v1/EndUsers' && method === 'POST') {
    const form = await context.readForm(request);
    const user: FakeEndUser = {
      sid: sidOf('IT'),
      type: form.get('Type') ?? '',
      friendlyName: form.get('FriendlyName') ?? '',
      attributes: JSON.parse(form.get('Attributes') ?? '{}') as Record<string, unknown>,
    };
    state.endUsers.push(user);
    json(response, 201, {
      sid: user.sid,
      account_sid: accountSid,
      friendly_name: user.friendlyName,
      type: user.type,
      attributes: user.attributes,
      date_created: iso(new Date()),
      date_updated: iso(new Date()),
      url: `${TRUSTHUB}/EndUsers/${user.sid}`,
    });
    return true;
  }
  if (path === '/trusthub/v1/SupportingDocuments' && method === 'POST') {
    const form = await context.readForm(request);
    const document: FakeSupportingDocument = {
      sid: sidOf('RD'),
      type: form.get('Type') ?? '',
      friendlyName: form.get('FriendlyName') ?? '',
      attributes: JSON.parse(form.get('Attributes') ?? '{}') as Record<string, unknown>,
    };
    const addressSids = ([] as unknown[]).concat(document.attributes.address_sids ?? []);
    if (!addressSids.every((sid) => state.addresses.some((address) => address.sid === sid))) {
      json(response, 400, twilioError(400, 22216, 'The supporting document names an unknown address.'));
      return true;
    }
    state.supportingDocuments.push(document);
    json(response, 201, {
      sid: document.sid,
      account_sid: accountSid,
      friendly_name: document.friendlyName,
      mime_type: null,
      status: 'draft',
      type: document.type,
      attributes: document.attributes,
      date_created: iso(new Date()),
      date_updated: iso(new Date()),
      url: `${TRUSTHUB}/SupportingDocuments/${document.sid}`,
    });
    return true;
  }
  if (path === addresses && method === 'POST') {
    const form = await context.readForm(request);
    const address: FakeAddress = {
      sid: sidOf('AD'),
      customerName: form.get('CustomerName') ?? '',
      street: form.get('Street') ?? '',
      streetSecondary: form.get('StreetSecondary'),
      city: form.get('City') ?? '',
      region: form.get('Region') ?? '',
      postalCode: form.get('PostalCode') ?? '',
      isoCountry: form.get('IsoCountry') ?? '',
    };
    state.addresses.push(address);
    const now = rfc2822(new Date());
    json(response, 201, {
      account_sid: accountSid,
      city: address.city,
      customer_name: address.customerName,
      date_created: now,
      date_updated: now,
      emergency_enabled: false,
      friendly_name: null,
      iso_country: address.isoCountry,
      postal_code: address.postalCode,
      region: address.region,
      sid: address.sid,
      street: address.street,
      street_secondary: address.streetSecondary,
      validated: false,
      verified: false,
      uri: `/2010-04-01/Accounts/${accountSid}/Addresses/${address.sid}.json`,
    });
    return true;
  }

  return false;
}
