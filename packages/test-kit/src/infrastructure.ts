/** Where the shared test infrastructure of one test run lives; provided to every test file. */
export interface TestInfrastructure {
  kafkaBrokers: string[];
  schemaRegistryUrl: string;
  /** A URL of the PostgreSQL server with rights to create databases; each test file gets its own. */
  postgresAdminUrl: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    infrastructure: TestInfrastructure;
  }
}
