import type { NewEvent, WebhookEventType } from '@leadline/events';
import { conflict, notFound } from '../errors';

/** The spec leaves the number of webhooks per partner open; we allow 20 (documented in the OpenAPI). */
export const MAX_WEBHOOKS_PER_PARTNER = 20;

export interface Webhook {
  id: string;
  url: string;
  events: readonly WebhookEventType[];
  active: boolean;
}

/** A partner's webhooks, as the read model holds them once caught up with the partner's partition. */
export interface PartnerWebhooksState {
  webhooks: readonly Webhook[];
}

export type WebhookCommand =
  | {
      type: 'CreateWebhook';
      webhook_id: string;
      url: string;
      events: readonly WebhookEventType[];
      /** Sealed by the caller: the decider never sees the plaintext secret. */
      secret_ciphertext: string;
    }
  | {
      type: 'UpdateWebhook';
      webhook_id: string;
      url?: string | undefined;
      events?: readonly WebhookEventType[] | undefined;
      active?: boolean | undefined;
    }
  | { type: 'DeleteWebhook'; webhook_id: string };

/** Subscriptions are a set: duplicates dropped, order kept as given. */
const uniqueEvents = (events: readonly WebhookEventType[]) => [...new Set(events)];
const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((item) => b.includes(item));

/** The partner's webhooks decider. Updates that change nothing produce no events. */
export function decideWebhooks(command: WebhookCommand, state: PartnerWebhooksState): NewEvent[] {
  switch (command.type) {
    case 'CreateWebhook': {
      if (state.webhooks.length >= MAX_WEBHOOKS_PER_PARTNER) {
        throw conflict(
          'webhook_limit_reached',
          `A partner can have at most ${MAX_WEBHOOKS_PER_PARTNER} webhooks; delete one first.`,
          { limit: MAX_WEBHOOKS_PER_PARTNER },
        );
      }
      return [
        {
          type: 'webhook.created',
          data: {
            webhook_id: command.webhook_id,
            url: command.url,
            events: uniqueEvents(command.events),
            secret_ciphertext: command.secret_ciphertext,
          },
        },
      ];
    }
    case 'UpdateWebhook': {
      const webhook = state.webhooks.find((candidate) => candidate.id === command.webhook_id);
      if (!webhook) throw notFound('webhook');
      const changes: { url?: string; events?: WebhookEventType[]; active?: boolean } = {};
      if (command.url !== undefined && command.url !== webhook.url) changes.url = command.url;
      if (command.events !== undefined && !sameSet(uniqueEvents(command.events), webhook.events)) {
        changes.events = uniqueEvents(command.events);
      }
      if (command.active !== undefined && command.active !== webhook.active) changes.active = command.active;
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'webhook.updated', data: { webhook_id: webhook.id, changes } }];
    }
    case 'DeleteWebhook': {
      const webhook = state.webhooks.find((candidate) => candidate.id === command.webhook_id);
      if (!webhook) throw notFound('webhook');
      return [{ type: 'webhook.deleted', data: { webhook_id: webhook.id } }];
    }
    default: {
      const unknownCommand: never = command;
      throw new Error(`Unknown command ${(unknownCommand as { type: string }).type}`);
    }
  }
}
