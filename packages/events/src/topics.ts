import type { TopicKind } from './envelope';

export type TopicNames = Readonly<Record<TopicKind, string>>;

const baseNames: Readonly<Record<TopicKind, string>> = {
  account: 'leadline.account-events',
  partner: 'leadline.partner-events',
};

/**
 * The log's topics. Account events are keyed by account id and partner events by partner id, so each
 * stream is totally ordered within its partition. A prefix isolates environments (each integration
 * test file gets its own). The log moves to a new generation of topics (more partitions, rewritten
 * records) with `npm run migrate-log`: generation 1 is the original names, unchanged, so existing
 * deployments, consumers and registry subjects keep theirs; generation N after it appends `.gN`.
 */
export function topicNames(prefix = '', generation = 1): TopicNames {
  const suffix = generation === 1 ? '' : `.g${generation}`;
  return {
    account: `${prefix}${baseNames.account}${suffix}`,
    partner: `${prefix}${baseNames.partner}${suffix}`,
  };
}

/** A topic of the log, as `topicNames` names it. */
export interface LogTopic {
  prefix: string;
  kind: TopicKind;
  generation: number;
}

const logTopicPattern = /^(.*)leadline\.(account|partner)-events(?:\.g([1-9]\d*))?$/;

/** What `topicNames` made `topic` from, or undefined for a topic that is not the log's. */
export function parseTopicName(topic: string): LogTopic | undefined {
  const match = logTopicPattern.exec(topic);
  if (!match) return undefined;
  const generation = match[3] === undefined ? 1 : Number(match[3]);
  // `.g1` is never a name of the log: generation 1 has no suffix.
  if (match[3] !== undefined && generation === 1) return undefined;
  return { prefix: match[1]!, kind: match[2] as TopicKind, generation };
}

/** Partitions of each topic of generation 1; later generations record theirs (`log_generations`). */
export const topicPartitions: Readonly<Record<TopicKind, number>> = {
  account: 8,
  partner: 2,
};
