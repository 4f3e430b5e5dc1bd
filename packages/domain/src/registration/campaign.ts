import { complianceReplies } from '../conversation/decide';

/**
 * What the campaign tells the carriers about the keywords its number answers: the account answers
 * STOP and HELP itself (see the conversation decider), so the registry is given the words and the
 * replies it actually sends, in the account's company name. The registry takes alphanumeric words.
 */
export function campaignKeywordReplies(companyName: string) {
  return {
    opt_out_keywords: ['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'REVOKE', 'OPTOUT'],
    opt_out_message: complianceReplies.opt_out(companyName),
    help_keywords: ['HELP'],
    help_message: complianceReplies.help(companyName),
  };
}
