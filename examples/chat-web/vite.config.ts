import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The dev server forwards the chat door to the API (`npm start` beside it), so the page and
// the API share an origin and need no CORS. REIN_API_URL names another API.
const api = process.env.REIN_API_URL ?? `http://127.0.0.1:${process.env.API_PORT ?? 8080}`;

export default defineConfig({
  plugins: [react()],
  server: { port: 5173, proxy: { '/v1': api } },
});
