// The config file every command reads unless --config names another. A file of its own so the
// CLI's option definitions (src/cli/commands/) can name it without loading the config schema.
export const DEFAULT_CONFIG_PATH = 'config/gateway.yaml';
