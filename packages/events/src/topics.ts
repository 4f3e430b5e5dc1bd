import type { TopicKind } from './envelope';

export type TopicNames = Readonly<Record<TopicKind, string>>;

/**
 * The log's topics. Account events are keyed by account id and partner events by partner id, so each
 * stream is totally ordered within its partition. A prefix isolates environments (each integration
 * test file gets its own).
 */
export function topicNames(prefix = ''): TopicNames {
  return {
    account: `${prefix}leadline.account-events`,
    partner: `${prefix}leadline.partner-events`,
  };
}

export const topicPartitions: Readonly<Record<TopicKind, number>> = {
  account: 8,
  partner: 2,
};
