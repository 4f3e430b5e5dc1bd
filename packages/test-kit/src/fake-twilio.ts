import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFakeCompliance, type FakeCompliance } from './fake-twilio-compliance';

export interface FakeTwilioMessage {
  sid: string;
  to: string;
  from: string;
  body: string;
  statusCallback: string | undefined;
}

export interface FakeTwilioNumber {
  sid: string;
  phoneNumber: string;
  smsUrl: string | undefined;
  smsMethod: string | undefined;
  /** Where Twilio posts inbound SMS when `smsUrl` failed (after the retries its fragment asks for). */
  smsFallbackUrl: string | undefined;
  smsFallbackMethod: string | undefined;
  /** As set when it was bought (the number itself when none was given). */
  friendlyName: string;
  /** When it was bought; a test may move it back to make the number look old. */
  dateCreated: Date;
}

export interface FakeTwilio {
  /** Give this as TWILIO_API_BASE_URL. */
  baseUrl: string;
  accountSid: string;
  authToken: string;
  messages: FakeTwilioMessage[];
  numbers: FakeTwilioNumber[];
  /** Numbers removed from the account (DELETE of an IncomingPhoneNumber), in the order released. */
  releasedNumbers: FakeTwilioNumber[];
  /** Numbers Twilio refuses to send to, with its error 21211 (invalid 'To'). */
  invalidRecipients: Set<string>;
  /**
   * How long each message request waits between being accepted (it is in `messages` from then on, as
   * a message Twilio took goes out even when its answer is lost) and the answer: a slow provider.
   */
  messageDelayMs: number;
  /**
   * Accepts message requests but answers none until the returned function is called (a provider that
   * hangs); answers held so far go out then.
   */
  holdAnswers(): () => void;
  /** Adds a number to the account as if it had been bought in Twilio's console. */
  addNumber(phoneNumber: string): FakeTwilioNumber;
  /** The A2P 10DLC onboarding endpoints (Trust Hub, brands, messaging services, campaigns). */
  compliance: FakeCompliance;
  close(): Promise<void>;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const rfc2822 = (date: Date) => date.toUTCString().replace('GMT', '+0000');

/**
 * Twilio's `X-Twilio-Signature`, computed as Twilio documents it: the full URL, then each POST
 * field's name and value in name order, HMAC-SHA1 with the auth token, base64. Written here
 * independently of the twilio package, so tests check our validation against the definition.
 */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  // Twilio signs the URL it requested: a fragment (its connection overrides, `#rc=3…`) is never sent.
  const requested = url.split('#')[0]!;
  const data = Object.keys(params)
    .sort()
    .reduce((acc, key) => acc + key + params[key], requested);
  return createHmac('sha1', authToken).update(Buffer.from(data, 'utf-8')).digest('base64');
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf-8'));
}

function json(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  response.end(JSON.stringify(body));
}

const twilioError = (status: number, code: number, message: string) => ({
  code,
  message,
  more_info: `https://www.twilio.com/docs/errors/${code}`,
  status,
});

/** An IncomingPhoneNumber resource, as Twilio answers it. */
function numberResource(accountSid: string, base: string, number: FakeTwilioNumber) {
  return {
    account_sid: accountSid,
    api_version: '2010-04-01',
    capabilities: { voice: true, sms: true, mms: true, fax: false },
    date_created: rfc2822(number.dateCreated),
    date_updated: rfc2822(number.dateCreated),
    friendly_name: number.friendlyName,
    phone_number: number.phoneNumber,
    sid: number.sid,
    sms_fallback_method: number.smsFallbackMethod ?? 'POST',
    sms_fallback_url: number.smsFallbackUrl ?? '',
    sms_method: number.smsMethod ?? 'POST',
    sms_url: number.smsUrl ?? '',
    status: 'in-use',
    uri: `${base}/IncomingPhoneNumbers/${number.sid}.json`,
  };
}

/** A Message resource as Twilio answers its creation: queued. */
function messageResource(accountSid: string, base: string, message: FakeTwilioMessage, now: Date) {
  const { sid, to } = message;
  return {
    account_sid: accountSid,
    api_version: '2010-04-01',
    body: message.body,
    date_created: rfc2822(now),
    date_sent: null,
    date_updated: rfc2822(now),
    direction: 'outbound-api',
    error_code: null,
    error_message: null,
    from: message.from,
    messaging_service_sid: null,
    num_media: '0',
    num_segments: '1',
    price: null,
    price_unit: 'USD',
    sid,
    status: 'queued',
    subresource_uris: { media: `${base}/Messages/${sid}/Media.json` },
    to,
    uri: `${base}/Messages/${sid}.json`,
  };
}

/** Twilio's search for a local US number to buy: one, Austin's, the next of the fake's series. */
function availableNumbers(base: string, url: URL, phoneNumber: string) {
  return {
    available_phone_numbers: [
      {
        friendly_name: phoneNumber,
        phone_number: phoneNumber,
        lata: '834',
        locality: 'Austin',
        rate_center: 'AUSTIN',
        latitude: '30.2672',
        longitude: '-97.7431',
        region: 'TX',
        postal_code: '78701',
        iso_country: 'US',
        address_requirements: 'none',
        beta: false,
        capabilities: { voice: true, SMS: true, MMS: true, fax: false },
      },
    ],
    uri: `${base}/AvailablePhoneNumbers/US/Local.json${url.search}`,
  };
}

/** A page of the account's IncomingPhoneNumbers, filtered and paged as the request asks. */
function incomingNumbersPage(
  accountSid: string,
  base: string,
  url: URL,
  numbers: readonly FakeTwilioNumber[],
) {
  // Twilio filters on an exact E.164 PhoneNumber, and pages its 2010 API lists: `Page` (from 0)
  // of `PageSize`, with the next page's URI while there is one.
  const wanted = url.searchParams.get('PhoneNumber');
  const pageSize = Number(url.searchParams.get('PageSize') ?? 50);
  const pageNumber = Number(url.searchParams.get('Page') ?? 0);
  const found = numbers.filter((number) => wanted === null || number.phoneNumber === wanted);
  const start = pageNumber * pageSize;
  const page = found.slice(start, start + pageSize);
  const pageUri = (n: number) => {
    const query = new URLSearchParams(url.searchParams);
    query.set('Page', String(n));
    query.set('PageSize', String(pageSize));
    return `${base}/IncomingPhoneNumbers.json?${query}`;
  };
  return {
    end: start + Math.max(page.length - 1, 0),
    first_page_uri: pageUri(0),
    incoming_phone_numbers: page.map((number) => numberResource(accountSid, base, number)),
    next_page_uri: start + pageSize < found.length ? pageUri(pageNumber + 1) : null,
    page: pageNumber,
    page_size: pageSize,
    previous_page_uri: pageNumber > 0 ? pageUri(pageNumber - 1) : null,
    start,
    uri: pageUri(pageNumber),
  };
}

/**
 * A local stand-in for the parts of Twilio's REST API we use, speaking its wire format: form-encoded
 * requests with HTTP basic auth, JSON resources as Twilio returns them, Twilio's error bodies.
 */
export async function startFakeTwilio(): Promise<FakeTwilio> {
  const accountSid = `AC${hex(16)}`;
  const authToken = hex(16);
  const messages: FakeTwilioMessage[] = [];
  const numbers: FakeTwilioNumber[] = [];
  const releasedNumbers: FakeTwilioNumber[] = [];
  const invalidRecipients = new Set<string>();
  let held: Promise<void> | undefined;
  let nextNumber = 1000;
  const base = `/2010-04-01/Accounts/${accountSid}`;
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  const compliance = createFakeCompliance({
    accountSid,
    numbers,
    readForm,
    json,
    twilioError,
    sign: (url, form) => twilioSignature(authToken, url, form),
  });

  function addNumber(
    phoneNumber: string,
    options: Omit<FakeTwilioNumber, 'sid' | 'phoneNumber' | 'friendlyName' | 'dateCreated'> & {
      friendlyName?: string;
    },
  ) {
    const number: FakeTwilioNumber = {
      sid: `PN${hex(16)}`,
      phoneNumber,
      ...options,
      friendlyName: options.friendlyName ?? phoneNumber,
      dateCreated: new Date(),
    };
    numbers.push(number);
    return number;
  }

  const server = createServer((request, response) => {
    void (async () => {
      if (request.headers.authorization !== expectedAuth) {
        return json(response, 401, twilioError(401, 20003, 'Authenticate'));
      }
      const url = new URL(request.url ?? '/', 'http://fake');
      const now = new Date();
      if (request.method === 'POST' && url.pathname === `${base}/Messages.json`) {
        const form = await readForm(request);
        const to = form.get('To') ?? '';
        if (invalidRecipients.has(to)) {
          return json(
            response,
            400,
            twilioError(400, 21211, `The 'To' number ${to} is not a valid phone number.`),
          );
        }
        const sid = `SM${hex(16)}`;
        const message = {
          sid,
          to,
          from: form.get('From') ?? '',
          body: form.get('Body') ?? '',
          statusCallback: form.get('StatusCallback') ?? undefined,
        };
        messages.push(message);
        if (fake.messageDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, fake.messageDelayMs));
        await held;
        return json(response, 201, messageResource(accountSid, base, message, now));
      }
      if (request.method === 'GET' && url.pathname === `${base}/AvailablePhoneNumbers/US/Local.json`) {
        const phoneNumber = `+1512555${String(nextNumber++).padStart(4, '0')}`;
        return json(response, 200, availableNumbers(base, url, phoneNumber));
      }
      if (request.method === 'POST' && url.pathname === `${base}/IncomingPhoneNumbers.json`) {
        const form = await readForm(request);
        const number = addNumber(form.get('PhoneNumber') ?? '', {
          smsUrl: form.get('SmsUrl') ?? undefined,
          smsMethod: form.get('SmsMethod') ?? undefined,
          smsFallbackUrl: form.get('SmsFallbackUrl') ?? undefined,
          smsFallbackMethod: form.get('SmsFallbackMethod') ?? undefined,
          friendlyName: form.get('FriendlyName') ?? undefined,
        });
        return json(response, 201, numberResource(accountSid, base, number));
      }
      if (request.method === 'GET' && url.pathname === `${base}/IncomingPhoneNumbers.json`) {
        return json(response, 200, incomingNumbersPage(accountSid, base, url, numbers));
      }
      const numberPath = url.pathname.match(
        new RegExp(`^${base}/IncomingPhoneNumbers/(PN[0-9a-f]+)\\.json$`),
      );
      if (request.method === 'DELETE' && numberPath) {
        // Twilio releases the number at once and answers 204 with no body; an unknown sid is a 404.
        const index = numbers.findIndex((number) => number.sid === numberPath[1]);
        if (index >= 0) {
          releasedNumbers.push(...numbers.splice(index, 1));
          response.writeHead(204);
          return response.end();
        }
      }
      if (await compliance.handle(request, response, url)) return;
      return json(
        response,
        404,
        twilioError(404, 20404, `The requested resource ${url.pathname} was not found`),
      );
    })().catch((error: unknown) => json(response, 500, { message: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeTwilio = {
    baseUrl: `http://127.0.0.1:${port}`,
    accountSid,
    authToken,
    messages,
    numbers,
    releasedNumbers,
    invalidRecipients,
    messageDelayMs: 0,
    holdAnswers() {
      let release!: () => void;
      held = new Promise((resolve) => (release = resolve));
      return () => {
        held = undefined;
        release();
      };
    },
    addNumber: (phoneNumber) =>
      addNumber(phoneNumber, {
        smsUrl: undefined,
        smsMethod: undefined,
        smsFallbackUrl: undefined,
        smsFallbackMethod: undefined,
      }),
    compliance: compliance.state,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
