import type { SmsSender } from './port';

/**
 * The local stand-in for Twilio's Messages API: nothing leaves the machine; every message counts as
 * delivered at once, under a Twilio-shaped id derived from our message id (so it is stable across a
 * retried send).
 */
export function createLocalSmsSender(): SmsSender {
  return {
    async send(message) {
      return { providerMessageId: `LM${message.messageId.replaceAll('-', '')}`, status: 'delivered' };
    },
  };
}
