import { KafkaContainer } from '@testcontainers/kafka';
import { PostgreSqlContainer } from '@testcontainers/postgresql';
import { GenericContainer, Wait } from 'testcontainers';
import type { TestInfrastructure } from './infrastructure';

/** The same three parts as scripts/infra, as containers, for machines with a Docker engine. */
export async function startContainers(): Promise<{
  infrastructure: TestInfrastructure;
  stop: () => Promise<void>;
}> {
  const [kafka, postgres] = await Promise.all([
    new KafkaContainer('confluentinc/cp-kafka:7.9.0')
      .withKraft()
      .withEnvironment({ KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false' })
      .start(),
    new PostgreSqlContainer('postgres:15').withUsername('postgres').withPassword('postgres').start(),
  ]);
  const registry = await new GenericContainer('apicurio/apicurio-registry:3.3.3')
    .withExposedPorts(8080)
    .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/config', 8080))
    .start();
  return {
    infrastructure: {
      kafkaBrokers: [`${kafka.getHost()}:${kafka.getMappedPort(9093)}`],
      schemaRegistryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
      postgresAdminUrl: postgres.getConnectionUri().replace(/\/[^/]*$/, '/postgres'),
    },
    async stop() {
      await Promise.all([kafka.stop(), postgres.stop(), registry.stop()]);
    },
  };
}
