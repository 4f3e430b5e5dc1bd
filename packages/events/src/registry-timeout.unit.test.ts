import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { afterEach, describe, expect, it } from 'vitest';
import { createSchemaRegistry } from './codec';

/**
 * A registry speaking the Confluent API for one subject (already configured BACKWARD), which leaves
 * the first `unanswered` registrations without an answer, as a stalled registry does.
 */
async function stallingRegistry(unanswered: number) {
  const registrations: http.ServerResponse[] = [];
  const server = http.createServer((request, response) => {
    if (request.method === 'GET' && request.url?.startsWith('/config/')) {
      response.setHeader('content-type', 'application/vnd.schemaregistry.v1+json');
      response.end(JSON.stringify({ compatibilityLevel: 'BACKWARD' }));
      return;
    }
    registrations.push(response);
    if (registrations.length <= unanswered) return;
    response.setHeader('content-type', 'application/vnd.schemaregistry.v1+json');
    response.end(JSON.stringify({ id: 7 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, registrations };
}

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const schema = { type: SchemaType.JSON as const, schema: JSON.stringify({ type: 'object' }) };

describe('the schema registry client', () => {
  it('gives up a request the registry never answers and tries it again', async () => {
    const registry = await stallingRegistry(1);
    const client = createSchemaRegistry(registry.url, { requestTimeoutMs: 200 });
    const { id } = await client.register(schema, { subject: 'leads-lead.created' });
    expect(id).toBe(7);
    expect(registry.registrations).toHaveLength(2);
  });

  it('fails, rather than hangs, when the registry never answers', async () => {
    const registry = await stallingRegistry(Infinity);
    const client = createSchemaRegistry(registry.url, { requestTimeoutMs: 200 });
    await expect(client.register(schema, { subject: 'leads-lead.created' })).rejects.toThrow(/Timeout/);
    // The first request and the client's three retries.
    expect(registry.registrations).toHaveLength(4);
  });
});
