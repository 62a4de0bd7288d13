/** The organization's permissions (api.md 5.4): managing users, settings, API keys and webhooks needs this one. */
export const MANAGE_ORGANIZATION = 'Manage Users and Organization Settings';
