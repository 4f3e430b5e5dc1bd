// Shared with every process that issues commands (the SMS gateway, later the sequencer and the AI agent).
export { connectCommandServices, type CommandServices } from '@leadline/runtime';
