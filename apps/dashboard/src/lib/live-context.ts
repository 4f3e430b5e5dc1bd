import { createContext, useContext, useEffect, useRef } from 'react';
import type { Changes } from './live';

export interface LiveHub {
  listen(listener: (changes: Changes) => void): () => void;
  emit(changes: Changes): void;
}

export function createLiveHub(): LiveHub {
  const listeners = new Set<(changes: Changes) => void>();
  return {
    listen(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    emit(changes) {
      for (const listener of listeners) listener(changes);
    },
  };
}

export const LiveContext = createContext<LiveHub>(createLiveHub());

/** Calls `onChanges` with each live change of the account while the component is shown. */
export function useLiveChanges(onChanges: (changes: Changes) => void) {
  const hub = useContext(LiveContext);
  const latest = useRef(onChanges);
  latest.current = onChanges;
  useEffect(() => hub.listen((changes) => latest.current(changes)), [hub]);
}
