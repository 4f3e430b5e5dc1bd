import { createContext, useContext } from 'react';
import type { Api, Session } from './lib/api';
import type { ParentChannel } from './lib/parent';

export interface Dashboard {
  api: Api;
  session: Session;
  parent: ParentChannel;
}

export const DashboardContext = createContext<Dashboard | null>(null);

export function useDashboard(): Dashboard {
  const dashboard = useContext(DashboardContext);
  if (!dashboard) throw new Error('useDashboard outside the dashboard');
  return dashboard;
}

/** Whether the user's role may do something; the server enforces the same rule. */
export const useCan = (capability: string) => useDashboard().session.capabilities[capability] === true;
