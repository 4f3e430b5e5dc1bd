import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
beforeAll(async () => {
  system = await startSystem({ projector: false });
});
afterAll(() => system?.close());

describe('the OpenAPI document', () => {
  it('is served without a key, as OpenAPI 3.1, and matches the reviewed contract', async () => {
    const response = await system.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe('3.1.0');
    expect(document.components.securitySchemes.partnerKey).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'X-Partner-Key',
    });
    // A contract change shows up in review as a change of this snapshot.
    expect(document.paths).toMatchSnapshot();
    // So is a change of what partners receive: the webhook payloads.
    expect(document.webhooks).toMatchSnapshot();
    expect(document.components.schemas).toMatchSnapshot();
  });

  it('has a readable docs page', async () => {
    const response = await system.app.inject({ method: 'GET', url: '/v1/docs/' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/html');
  });
});
