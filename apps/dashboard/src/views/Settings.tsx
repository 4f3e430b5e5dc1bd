import { useCallback, useState } from 'react';
import { Context } from './settings/Context';
import { Prompt } from './settings/Prompt';
import { Registration } from './settings/Registration';
import { Requirements } from './settings/Requirements';

/**
 * The account's settings: where the carriers' registration of its number stands (first: until it is
 * approved, texts may be held), the assistant's prompt, the company context and the checklist.
 */
export function Settings() {
  // The composed prompt includes the checklist and the company context edited beside it.
  const [contextVersion, setContextVersion] = useState(0);
  const contextChanged = useCallback(() => setContextVersion((version) => version + 1), []);
  return (
    <div className="settings">
      <Registration />
      <Prompt contextVersion={contextVersion} />
      <Context onChanged={contextChanged} />
      <Requirements onChanged={contextChanged} />
    </div>
  );
}
