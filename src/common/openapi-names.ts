/** Names of the contract's security schemes. */
export const API_KEY_SCHEME = 'svc-api-key';
export const OAUTH_SCHEME = 'oauth2';
