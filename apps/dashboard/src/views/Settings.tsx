import { useCallback, useState } from 'react';
import { Context } from './settings/Context';
import { Prompt } from './settings/Prompt';
import { Requirements } from './settings/Requirements';

/** The account's AI settings: the assistant's prompt, the company context and the checklist. */
export function Settings() {
  // The composed prompt includes the checklist and the company context edited beside it.
  const [contextVersion, setContextVersion] = useState(0);
  const contextChanged = useCallback(() => setContextVersion((version) => version + 1), []);
  return (
    <div className="settings">
      <Prompt contextVersion={contextVersion} />
      <Context onChanged={contextChanged} />
      <Requirements onChanged={contextChanged} />
    </div>
  );
}
