interface ImportMetaEnv {
  /** The API's base URL when the page is served from another origin (the API then needs REIN_CORS_ORIGINS); unset: this origin. */
  readonly VITE_REIN_API_URL?: string;
  /** The agent to chat with. @default 'order-assistant' */
  readonly VITE_REIN_AGENT?: string;
}
interface ImportMeta {
  readonly env: ImportMetaEnv;
}
