// How many keys one page of a listing holds. A file of its own so `keys list --limit`'s help
// (src/cli/commands/keys.ts) can say it without loading the key service and the config schema.
export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 500;
