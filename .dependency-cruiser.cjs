/**
 * The shape of the tree, checked by `npm test` (`npm run lint:shape`): which module may import which.
 * Services never import each other (what two services share lives in a package), packages never import
 * services, no test reaches into another service's test folder (the shared harness is system-test/), the domain core does no I/O, and no module imports itself through others.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import circle: two modules that need each other are one concern, or need a third.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-service-to-service',
      comment:
        'A service imports another service: move what they share into packages/ (domain rules to ' +
        'packages/domain, state loaders to packages/decision-state, infrastructure to packages/runtime).',
      severity: 'error',
      from: { path: '^services/([^/]+)/src/' },
      to: { path: '^services/([^/]+)/', pathNot: '^services/$1/' },
    },
    {
      name: 'no-foreign-test-harness',
      comment:
        "A test reaches into another service's test folder: what tests of several services share is " +
        'the system harness in system-test/ (or packages/test-kit when it needs no service).',
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/[^/]+/test/', pathNot: '^services/$1/' },
    },
    {
      name: 'no-test-harness-outside-services',
      comment:
        "Apps, examples, benches and the system harness use system-test/, not a service's test folder.",
      severity: 'error',
      from: { path: '^(apps|examples|bench|system-test|packages)/' },
      to: { path: '^services/[^/]+/test/' },
    },
    {
      name: 'no-package-to-service',
      comment: 'Packages are what services share; a package that imports a service turns that around.',
      severity: 'error',
      from: { path: '^packages/[^/]+/src/' },
      to: { path: '^(services|apps)/' },
    },
    {
      name: 'domain-is-pure',
      comment:
        'The domain core decides on values it is given: no database, broker, HTTP or other package ' +
        'of ours but the event catalog.',
      severity: 'error',
      from: { path: '^packages/domain/src/' },
      to: {
        path: '^packages/(?!domain/|events/)|node_modules/(pg|kysely|kafkajs|fastify|twilio|openai)/',
      },
    },
    {
      name: 'no-view-to-view',
      comment:
        'A dashboard view imports no other view (views/Leads.tsx and its parts in views/leads/ are one ' +
        'view); what views share goes to components/ or lib/.',
      severity: 'error',
      from: { path: '^apps/dashboard/src/views/', pathNot: '\\.test\\.tsx?$' },
      to: { path: '^apps/dashboard/src/views/[A-Z][^/]*$' },
    },
    {
      name: 'no-view-part-to-other-view',
      comment: 'The parts of one view (views/<view>/) import none of another view.',
      severity: 'error',
      from: { path: '^apps/dashboard/src/views/([a-z]+)/' },
      to: { path: '^apps/dashboard/src/views/[a-z]+/', pathNot: '^apps/dashboard/src/views/$1/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(apps/dashboard/dist|\\.infra|\\.tools)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
