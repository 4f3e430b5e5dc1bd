import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the command API at /embed; `npm run dev:dashboard` proxies the embed API to a running one.
export default defineConfig({
  base: '/embed/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0 },
  server: {
    port: 5173,
    proxy: { '/embed/api': process.env.API_URL ?? 'http://127.0.0.1:8080' },
  },
});
