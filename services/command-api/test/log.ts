import { Kafka, logLevel } from 'kafkajs';

/**
 * A Kafka client for a broker that refuses every connection, without retrying: each append of a
 * command bus built on it fails at once, as when the broker is gone.
 */
export function refusingKafka(): Kafka {
  return new Kafka({
    clientId: 'refused',
    brokers: ['127.0.0.1:1'],
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
}
