import { createRoot } from 'react-dom/client';
import { App } from './App';
import { takeUrlParameters } from './lib/url-token';
import './styles.css';

// First thing: the token leaves the address bar (and so the history and any Referer).
const parameters = takeUrlParameters(window.location, window.history);
createRoot(document.getElementById('root')!).render(<App parameters={parameters} />);
